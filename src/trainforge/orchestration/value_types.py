"""Structured values in the value store: an object of a registered type (a dataclass of frames,
arrays and plain fields, such as the training pipeline's splits or evaluation report) encoded
as one `struct` value.

A type is registered with the functions that take it apart into a *state* and build it back
(`register_value_type`; a dataclass by default: its init fields). A state is a tree of

    None, bool, int, float, str          as they are (NaN and infinities kept)
    lists, tuples, str-keyed dicts       each kept as what it was (a dict's order too)
    pandas frames                        Parquet (`ParquetCodec`: index and dtypes kept)
    numpy arrays                         the .npy format (no object arrays)
    torch tensors                        safetensors
    bytes, datetimes                     as themselves
    objects of registered types          their own state, nested (an enum's: its value)

The encoding is `TFV1`, an 8-byte little-endian header length, the header (JSON: the tree with
blobs by index, each blob's offset and size, and the modules that register the types it
names), then the blobs. It is deterministic: the same state gives the same bytes, so the same
value is stored once. Decoding a type nobody has registered in this process first imports the
modules the header names (a worker on another machine gets the pipeline's types that way); a
type still unknown is refused with its name.

A decoder may need the decoding process's session: a data listing reopens its source with the
storage options that process holds for it (never stored). Such a type registers a
`from_state` of `(state, context)` with `context=True`, and gets the `DecodeContext` of the
value store decoding it.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import io
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from trainforge.config import Credentials
from trainforge.errors import ValueStoreError

MAGIC = b"TFV1"
State = Any
ToState = Callable[[Any], State]


@dataclass(frozen=True)
class DecodeContext:
    """What the process decoding a value lends its decoders: the credentials of the
    locations a value names (a listing's source)."""

    credentials: Credentials = field(default_factory=Credentials)


class Unstorable(Exception):
    """A value holds something no part of a state can be (a callable, an object array): the
    value stays in memory."""


@dataclass(frozen=True)
class ValueType:
    cls: type
    to_state: ToState
    from_state: Callable[..., Any]
    module: str  # the module whose import registers it
    context: bool = False  # from_state takes (state, DecodeContext)


_TYPES: dict[str, ValueType] = {}
_imported: set[str] = set()  # registering modules a decode imported


def type_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def register_value_type(cls: type, *, module: str, to_state: ToState | None = None,
                        from_state: Callable[..., Any] | None = None,
                        context: bool = False) -> None:
    """Let values of `cls` (exactly that class) go into the value store. `module` is the
    module that makes this call (`__name__`): a process decoding the type imports it.
    Without `to_state` / `from_state`, `cls` must be a dataclass (its init fields are the
    state, and `cls(**state)` builds it back) or an enum (its member's value). With
    `context`, `from_state(state, context)` gets the decoding value store's
    `DecodeContext`."""
    if to_state is None or from_state is None:
        if isinstance(cls, type) and issubclass(cls, enum.Enum):
            to_state, from_state = to_state or (lambda member: member.value), from_state or cls
        elif dataclasses.is_dataclass(cls):
            names = [f.name for f in dataclasses.fields(cls) if f.init]
            to_state = to_state or (lambda value: {name: getattr(value, name)
                                                   for name in names})
            from_state = from_state or (lambda state: cls(**state))
        else:
            raise TypeError(f"{type_name(cls)}: a value type other than a dataclass or an "
                            "enum needs to_state and from_state")
    _TYPES[type_name(cls)] = ValueType(cls, to_state, from_state, module, context)


def registered(value: Any) -> bool:
    """Whether `value`'s class is a registered value type."""
    return type_name(type(value)) in _TYPES


class StructCodec:
    name = "struct"
    suffix = "tfv"

    def accepts(self, value: Any) -> bool:
        return registered(value)

    def encode(self, value: Any) -> bytes:
        """The value's bytes; `Unstorable` when part of it cannot be stored."""
        writer = _Writer()
        tree = writer.node(value, 0)
        offsets, position = [], 0
        for blob in writer.blobs:
            offsets.append([position, len(blob)])
            position += len(blob)
        header = json.dumps({"tree": tree, "blobs": offsets, "modules": sorted(writer.modules)},
                            separators=(",", ":")).encode()  # dicts keep their order
        return b"".join([MAGIC, struct.pack("<Q", len(header)), header, *writer.blobs])

    def decode(self, data: bytes, context: DecodeContext) -> Any:
        if data[:4] != MAGIC or len(data) < 12:
            raise ValueStoreError("not a struct value (no TFV1 header)")
        (length,) = struct.unpack("<Q", data[4:12])
        header = json.loads(data[12:12 + length])
        start = 12 + length
        blobs = [memoryview(data)[start + offset:start + offset + size]
                 for offset, size in header["blobs"]]
        for module in header["modules"]:
            if module not in _imported:
                try:
                    importlib.import_module(module)
                except ImportError as exc:
                    raise ValueStoreError(f"{module}, the module registering its types, does "
                                          f"not import: {exc}") from exc
                _imported.add(module)
        return _Reader(blobs, context).node(header["tree"])


class _Writer:
    def __init__(self) -> None:
        self.blobs: list[bytes] = []
        self.modules: set[str] = set()

    def blob(self, data: bytes) -> int:
        self.blobs.append(data)
        return len(self.blobs) - 1

    def node(self, value: Any, depth: int) -> Any:  # noqa: PLR0911 - one branch per kind
        if depth > 64:
            raise Unstorable("the value nests deeper than 64 levels")
        kind = _TYPES.get(type_name(type(value)))
        if kind is not None:  # first: a str enum is a str too
            self.modules.add(kind.module)
            return {"o": type_name(kind.cls), "v": self.node(kind.to_state(value), depth + 1)}
        if isinstance(value, enum.Enum):  # would come back a plain str or int
            raise Unstorable(f"{type_name(type(value))} is not a registered value type")
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float)):
            return float(value) if isinstance(value, float) else int(value)
        if isinstance(value, list):
            return {"l": [self.node(item, depth + 1) for item in value]}
        if isinstance(value, tuple):
            return {"t": [self.node(item, depth + 1) for item in value]}
        if isinstance(value, dict):
            if not all(isinstance(key, str) for key in value):
                raise Unstorable("a dict with keys other than strings")
            return {"d": {key: self.node(item, depth + 1) for key, item in value.items()}}
        if isinstance(value, bytes):
            return {"b": self.blob(value)}
        if isinstance(value, datetime):
            return {"dt": value.isoformat()}
        return self.array_node(value, depth)

    def array_node(self, value: Any, depth: int) -> Any:
        from trainforge.orchestration.values import ParquetCodec, SafetensorsCodec

        if isinstance(value, np.generic):
            return self.node(value.item(), depth)
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise Unstorable("an array of Python objects")
            buffer = io.BytesIO()
            np.save(buffer, value, allow_pickle=False)
            return {"a": self.blob(buffer.getvalue())}
        for codec, tag in ((ParquetCodec(), "f"), (SafetensorsCodec(), "T")):
            if codec.accepts(value):
                try:
                    return {tag: self.blob(codec.encode(value))}
                except Exception as exc:
                    raise Unstorable(f"a {type(value).__name__} that {codec.name} does not "
                                     f"take: {exc}") from exc
        raise Unstorable(f"{type_name(type(value))} is not a registered value type")


class _Reader:
    def __init__(self, blobs: list[memoryview], context: DecodeContext) -> None:
        self.blobs = blobs
        self.context = context

    def node(self, tree: Any) -> Any:  # noqa: PLR0911 - one branch per kind
        if not isinstance(tree, dict):
            return tree
        tag = "o" if "o" in tree else next(iter(tree))
        if tag == "l":
            return [self.node(item) for item in tree["l"]]
        if tag == "t":
            return tuple(self.node(item) for item in tree["t"])
        if tag == "d":
            return {key: self.node(item) for key, item in tree["d"].items()}
        if tag == "b":
            return bytes(self.blobs[tree["b"]])
        if tag == "dt":
            return datetime.fromisoformat(tree["dt"])
        if tag == "o":
            kind = _known(tree["o"])
            state = self.node(tree["v"])
            return kind.from_state(state, self.context) if kind.context else kind.from_state(state)
        return self.array(tag, tree[tag])

    def array(self, tag: str, index: int) -> Any:
        from trainforge.orchestration.values import ParquetCodec, SafetensorsCodec

        data = bytes(self.blobs[index])
        if tag == "a":
            return np.load(io.BytesIO(data), allow_pickle=False)
        if tag == "f":
            return ParquetCodec().decode(data, self.context)
        if tag == "T":
            return SafetensorsCodec().decode(data, self.context)
        raise ValueStoreError(f"unknown part kind {tag!r}")


def _known(name: str) -> ValueType:
    if name not in _TYPES:
        raise ValueStoreError(f"{name} is not a registered value type in this process (import "
                              "the module that registers it)")
    return _TYPES[name]
