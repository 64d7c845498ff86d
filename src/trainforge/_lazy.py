"""Package exports imported on first use (PEP 562).

A package lists each name it exports with the module defining it; `from package import name`
then imports that module alone. This keeps `trainforge --help`, `trainforge runs list` and
`trainforge validate` from importing torch, pandas or SQLAlchemy with the rest of a package
(each costs more than such a command should take). The package imports the same names under
`TYPE_CHECKING`, so type checkers see them as usual.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose `exports` map each exported name to the
    module defining it. A name is imported on first access and then kept in the package, so
    later lookups are plain attribute reads; an unknown name raises `AttributeError`."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*exports, *getattr(sys.modules[package], "__all__", ())})

    return __getattr__, __dir__
