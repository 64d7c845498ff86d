"""A step's cache key: the hash of what its outputs depend on, kept part by part so
`explain-cache` can say which part changed.

    code     the step function's source and that of every first-party function, class and
             module it reaches (through its globals, closures and attribute chains such as
             `helpers.scale`), and the module-level constants it reads; each normalised as its
             syntax tree without docstrings, so comments and formatting do not count. Labelled
             by file (`features/_scale.py:fit`, a module as `features/_scale.py`)
    params   the resolved params, as canonical JSON
    data     for params that name data files or folders, the content hash of each file
    inputs   the digest of each input value (the value store's sha256 of its bytes)
    deps     the versions of the installed distributions the code reaches (pandas, torch,
             trainforge itself) and the Python version
    outputs  the output names

First-party code is what is neither in the standard library nor installed (in a
`site-packages` or `dist-packages` folder), nor trainforge (versioned as a dependency). A step
whose input has no codec (held in memory) or whose params are not plain values gets no key: it
always runs, and the reason is recorded.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import inspect
import json
import sys
import sysconfig
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_CONSTANTS = (int, float, str, bytes, bool, type(None))
_OWN_PACKAGE = "trainforge"


@dataclass(frozen=True)
class CacheKey:
    """The key (None: not cached, `reason` says why) and the parts it hashes."""

    digest: str | None
    parts: dict[str, Any]
    reason: str | None = None


def digest_of(parts: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(parts).encode()).hexdigest()


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_not_plain)


def _not_plain(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not a plain value")


def plain_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` as plain JSON values (pydantic models dumped); TypeError naming one that is
    not."""
    plain: dict[str, Any] = {}
    for name, value in params.items():
        dump = getattr(value, "model_dump", None)
        value = dump(mode="json") if callable(dump) else value
        try:
            canonical(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"param {name!r}: {exc}") from exc
        plain[name] = value
    return plain


class Fingerprinter:
    """Code parts and dependency versions of step functions, each walked once per instance
    (one per pipeline run, so an edit between runs is seen by the next)."""

    def __init__(self) -> None:
        self._walks: dict[int, tuple[dict[str, str], set[str]]] = {}
        self._distributions: dict[str, list[str]] | None = None

    def code(self, fn: Callable[..., Any]) -> tuple[dict[str, str], dict[str, str]]:
        """(code parts by label, dependency versions by distribution) of `fn`."""
        walk = self._walks.get(id(fn))
        if walk is None:
            walker = _CodeWalk()
            walker.callable(fn)
            walk = (walker.code, walker.third_party)
            self._walks[id(fn)] = walk
        return dict(walk[0]), self._versions(walk[1])

    def _versions(self, modules: set[str]) -> dict[str, str]:
        if self._distributions is None:
            self._distributions = dict(importlib.metadata.packages_distributions())
        versions = {"python": ".".join(map(str, sys.version_info[:3]))}
        for module in sorted(modules):
            for name in self._distributions.get(module, []):
                try:
                    versions[name.lower()] = importlib.metadata.version(name)
                except importlib.metadata.PackageNotFoundError:
                    continue
        return versions


def data_hashes(params: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    """The content hash of each data param's file or folder (local), or fsspec's checksum of
    each file (any other URL)."""
    hashes: dict[str, str] = {}
    for name in names:
        location = params.get(name)
        if not isinstance(location, str):
            raise TypeError(f"param {name!r} is declared data, and holds {location!r}, not a "
                            "path or URL")
        hashes[name] = _content_hash(location)
    return hashes


def _content_hash(location: str) -> str:
    if "://" in location and not location.startswith("file://"):
        import fsspec

        fs, path = fsspec.core.url_to_fs(location)
        files = sorted(fs.find(path)) if fs.isdir(path) else [path]
        return digest_of({file: str(fs.ukey(file)) for file in files})
    path = Path(location.removeprefix("file://"))
    if path.is_file():
        return _file_sha256(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file()
                       and not any(part.startswith(".") for part in p.relative_to(path).parts))
        return digest_of({p.relative_to(path).as_posix(): _file_sha256(p) for p in files})
    raise FileNotFoundError(f"{location}: no such data file or folder")


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for chunk in iter(functools.partial(source.read, 1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class _CodeWalk:
    """First-party code reached from a callable, hashed; third-party top-level modules met."""

    def __init__(self) -> None:
        self.code: dict[str, str] = {}
        self.third_party: set[str] = set()
        self._seen: set[int] = set()

    def callable(self, fn: Any) -> None:
        while isinstance(fn, functools.partial):
            fn = fn.func
        fn = inspect.unwrap(fn)
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        if isinstance(fn, types.FunctionType):
            self.function(fn)
        elif isinstance(fn, type):
            self.klass(fn)
        elif isinstance(call := type(fn).__call__, types.FunctionType):
            self.function(call)
        else:
            self._third(getattr(fn, "__module__", None) or type(fn).__module__)

    def function(self, fn: types.FunctionType) -> None:
        if id(fn) in self._seen:
            return
        self._seen.add(id(fn))
        module = sys.modules.get(fn.__module__)
        if not _first_party(module):
            self._third(fn.__module__)
            return
        node = _parsed(fn)
        label = f"{_module_label(module)}:{fn.__qualname__}"
        if node is None:
            self.code[label] = hashlib.sha256(fn.__code__.co_code).hexdigest()
            return
        self.code[label] = _normalised_hash(node)
        scope = {**fn.__globals__, **inspect.getclosurevars(fn).nonlocals}
        for chain in _references(node):
            self._reference(chain, scope, module)

    def klass(self, cls: type) -> None:
        if id(cls) in self._seen:
            return
        self._seen.add(id(cls))
        module = sys.modules.get(cls.__module__)
        if not _first_party(module):
            self._third(cls.__module__)
            return
        node = _parsed(cls)
        if node is None:
            return
        self.code[f"{_module_label(module)}:{cls.__qualname__}"] = _normalised_hash(node)
        scope = vars(module) if module is not None else {}
        for chain in _references(node):
            self._reference(chain, scope, module)

    def module(self, module: types.ModuleType) -> None:
        if id(module) in self._seen:
            return
        self._seen.add(id(module))
        if not _first_party(module):
            self._third(module.__name__)
            return
        try:
            tree = ast.parse(inspect.getsource(module))
        except (OSError, TypeError, SyntaxError):
            return
        self.code[_module_label(module)] = _normalised_hash(tree)

    def _reference(self, chain: list[str], scope: Mapping[str, Any],
                   home: types.ModuleType | None) -> None:
        if chain[0] not in scope:
            return
        found = scope[chain[0]]
        for attribute in chain[1:]:
            if not isinstance(found, types.ModuleType) or not hasattr(found, attribute):
                break
            home, found = found, getattr(found, attribute)
        if isinstance(found, types.ModuleType):
            self.module(found)
        elif isinstance(found, (types.FunctionType, functools.partial)) or (
                isinstance(found, type)):
            self.callable(found)
        elif isinstance(found, _CONSTANTS) or _constant_tuple(found):
            if _first_party(home):
                label = f"{_module_label(home)}:{'.'.join(chain)}"
                self.code[label] = hashlib.sha256(repr(found).encode()).hexdigest()
            elif home is not None:
                self._third(home.__name__)
        elif callable(found) or hasattr(found, "__module__"):
            self._third(getattr(found, "__module__", None) or type(found).__module__)

    def _third(self, module_name: str | None) -> None:
        if not module_name:
            return
        top = module_name.split(".")[0]
        if top not in sys.stdlib_module_names and top != "builtins":
            self.third_party.add(top)


def _constant_tuple(value: Any) -> bool:
    return isinstance(value, (tuple, frozenset)) and all(
        isinstance(item, _CONSTANTS) for item in value)


@functools.cache
def _standard_library() -> tuple[str, ...]:
    return tuple(str(Path(sysconfig.get_paths()[name]).resolve())
                 for name in ("stdlib", "platstdlib"))


def _first_party(module: types.ModuleType | None) -> bool:
    if module is None:
        return False
    name = module.__name__
    if name.split(".")[0] in (_OWN_PACKAGE, "builtins") or name in sys.builtin_module_names:
        return False
    file = getattr(module, "__file__", None)
    if not file:
        return False
    resolved = Path(file).resolve()
    if {"site-packages", "dist-packages"} & set(resolved.parts):
        return False
    return not any(str(resolved).startswith(root + "/") for root in _standard_library())


def _module_label(module: types.ModuleType | None) -> str:
    """`package/module.py` (from the module's dotted name): stable wherever the code lives."""
    if module is None:
        return "<unknown>"
    if module.__name__ == "__main__":
        return Path(getattr(module, "__file__", "__main__")).name
    file = getattr(module, "__file__", "") or ""
    parts = module.__name__.split(".")
    if file.endswith("__init__.py"):
        return "/".join([*parts, "__init__.py"])
    return "/".join(parts) + ".py"


def _parsed(obj: Any) -> ast.AST | None:
    try:
        source = textwrap.dedent(inspect.getsource(obj))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0] if tree.body else tree
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        node.decorator_list = []
    return node


def _normalised_hash(node: ast.AST) -> str:
    """The hash of `node` without docstrings, line numbers, comments or formatting."""
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if (isinstance(inner, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            inner.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(node, include_attributes=False).encode()).hexdigest()


def _references(node: ast.AST) -> Iterator[list[str]]:
    """Dotted name chains read in `node` (`helpers.scale` → ["helpers", "scale"])."""
    inner: set[int] = set()
    for item in ast.walk(node):
        if isinstance(item, ast.Attribute) and id(item) not in inner:
            chain: list[str] = []
            current: ast.AST = item
            while isinstance(current, ast.Attribute):
                inner.add(id(current.value))
                chain.append(current.attr)
                current = current.value
            if isinstance(current, ast.Name):
                yield [current.id, *reversed(chain)]
        elif isinstance(item, ast.Name) and id(item) not in inner:
            yield [item.id]


@dataclass
class KeyParts:
    """What a step's key is built from, before hashing."""

    code: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    data: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    deps: dict[str, str] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "params": self.params, "data": self.data,
                "inputs": self.inputs, "deps": self.deps, "outputs": self.outputs}
