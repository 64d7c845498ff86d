"""The optional dependencies (pyproject's extras) behind commands, in one table.

`pip install trainforge` installs the core; `serve`, `tune`, `export` and a PostgreSQL or S3
home need an extra each (`pip install 'trainforge[all]'` has them all). A command that needs
one calls `require_extra` first, so a missing extra ends it with one line naming what to
install, exit 1, before anything is read or written: checked up front with `find_spec`, since
some libraries answer a missing module with errors of their own wording (torch's ONNX exporter
says "Module onnx is not installed!"). `extra_for` maps a failed import met later (a database
driver, a file system) to its extra, for `main` to say the same.
"""

from __future__ import annotations

import importlib.util

from trainforge.cli import _render

# extra -> the top-level modules it installs that trainforge imports
EXTRAS: dict[str, tuple[str, ...]] = {
    "postgres": ("psycopg",),
    "server": ("fastapi", "uvicorn", "prometheus_client"),
    "s3": ("s3fs",),
    "tune": ("optuna",),
    "export": ("onnx", "onnxruntime", "onnxscript"),
    "tensorboard": ("tensorboard",),
}


def install_hint(extra: str) -> str:
    return f"pip install 'trainforge[{extra}]'"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a module set to None
        return False


def require_extra(command: str, extra: str) -> None:
    """Exit 1 with one line unless every module of `extra` can be imported; `command` is what
    the user typed (`trainforge serve`)."""
    if not all(_importable(module) for module in EXTRAS[extra]):
        _render.fail(f"{command} needs the optional {extra!r} dependencies: "
                     f"{install_hint(extra)}", 1)


def extra_for(exc: BaseException) -> str | None:
    """The extra whose module failed to import in `exc` or the errors it was raised from
    (fsspec, for one, raises its own ImportError from s3fs's), or None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            top = seen.name.partition(".")[0]
            for extra, modules in EXTRAS.items():
                if top in modules:
                    return extra
        seen = seen.__cause__ or seen.__context__
    return None
