"""Split a nested training state into tensors and a JSON document, and join them back exactly.

A state is a tree of mappings, lists and tuples whose leaves are tensors, NumPy arrays, Python
scalars (None, bool, int, float, str), NumPy scalars and bytes. `encode` walks it once and returns

- `tree`: a JSON-ready value mirroring the state, with a tagged object `{"$t": ...}` wherever
  plain JSON would lose the type: tuples, dicts whose keys are not all strings, OrderedDicts
  (with the `_metadata` of a module's state dict), bytes (base64), non-finite floats, NumPy
  scalars, and a reference `{"$t": "tensor", "key": ...}` per tensor; other mappings come back
  as dicts;
- `tensors`: every tensor (and NumPy array, as a tensor sharing its memory) by a flat key.

A flat key is the path to the leaf, one segment per level joined by "/": a string key with "~",
"/" and "#" escaped as "~0", "~1", "~2"; any other key or list position as "#" plus a type
letter: `#i3` (int key 3), `#f0.5`, `#b1`, `#n` (None), `#3` (position 3) and `#m` (an
OrderedDict's `_metadata`); the name "__metadata__", which safetensors reserves, becomes
"~3__metadata__". Escaped strings never contain "/" or "#", so different paths always give
different keys, e.g. optimizer state for parameter 0 is `optimizer/state/#i0/exp_avg`.

`decode(tree, tensors)` rebuilds the state with the same types, key order and values. Nothing
here reads files; both functions are pure and thread-safe.
"""

from __future__ import annotations

import base64
import math
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from trainforge.errors import CheckpointError

TAG = "$t"
RESERVED = "__metadata__"
_SCALARS = (type(None), bool, int, str)
_KEY_TYPES = (str, int, float, bool, type(None))


def encode(state: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """The JSON-ready tree of `state` and its tensors by flat key (tensors are not copied)."""
    tensors: dict[str, torch.Tensor] = {}
    return _encode(state, (), tensors), tensors


def decode(tree: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    """The state `encode` was given, from its tree and tensors; `CheckpointError` if malformed."""
    try:
        return _decode(tree, tensors)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(f"state document is malformed: {exc!r}") from exc


def _where(path: tuple[str, ...]) -> str:
    return repr("/".join(path)) if path else "<root>"


def _segment(key: Any) -> str:
    if key == RESERVED:
        return f"~3{key}"  # safetensors keeps this name for its header; "~3" comes from no string
    if isinstance(key, str):
        return key.replace("~", "~0").replace("/", "~1").replace("#", "~2")
    if isinstance(key, bool):
        return f"#b{int(key)}"
    if isinstance(key, int):
        return f"#i{key}"
    if isinstance(key, float):
        return f"#f{key!r}"
    return "#n"


def _encode(value: Any, path: tuple[str, ...], tensors: dict[str, torch.Tensor]) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is float:
        return value if math.isfinite(value) else {TAG: "float", "v": repr(value)}
    if isinstance(value, torch.Tensor):
        return _tensor_ref("tensor", value.detach(), path, tensors)
    if isinstance(value, np.ndarray):
        return _tensor_ref("ndarray", _from_numpy(value, path), path, tensors)
    if isinstance(value, np.generic):
        return _numpy_scalar(value, path)
    if kind is bytes:
        return {TAG: "bytes", "b64": base64.b64encode(value).decode("ascii")}
    if kind is list or kind is tuple:
        items = [_encode(v, (*path, f"#{i}"), tensors) for i, v in enumerate(value)]
        return items if kind is list else {TAG: "tuple", "v": items}
    if isinstance(value, Mapping):
        return _encode_mapping(value, path, tensors)
    raise CheckpointError(
        f"state at {_where(path)}: cannot store a {kind.__qualname__}; expected "
        "tensors, NumPy arrays, None, bool, int, float, str, bytes, lists, tuples or dicts"
    )


def _encode_mapping(value: Mapping, path: tuple[str, ...], tensors: dict) -> Any:
    for key in value:
        if type(key) not in _KEY_TYPES:
            raise CheckpointError(
                f"state at {_where(path)}: key {key!r} is a "
                f"{type(key).__qualname__}; expected str, int, float, bool or None"
            )
    pairs = [(k, _encode(v, (*path, _segment(k)), tensors)) for k, v in value.items()]
    if isinstance(value, OrderedDict):
        # A module's state_dict() is an OrderedDict whose `_metadata` holds the versions that
        # load_state_dict() reads.
        node = {TAG: "odict", "items": [[_encode(k, path, tensors), v] for k, v in pairs]}
        metadata = getattr(value, "_metadata", None)
        if metadata is not None:
            node["metadata"] = _encode(metadata, (*path, "#m"), tensors)
        return node
    if all(type(k) is str and k != TAG for k, _ in pairs):
        return dict(pairs)
    return {TAG: "dict", "items": [[_encode(k, path, tensors), v] for k, v in pairs]}


def _tensor_ref(tag: str, tensor: torch.Tensor, path: tuple[str, ...], tensors: dict) -> dict:
    key = "/".join(path)
    tensors[key] = tensor
    return {TAG: tag, "key": key}


def _from_numpy(array: np.ndarray, path: tuple[str, ...]) -> torch.Tensor:
    try:
        native = np.asarray(array, dtype=array.dtype.newbyteorder("="), order="C")
        return torch.from_numpy(native)
    except TypeError as exc:
        raise CheckpointError(
            f"state at {_where(path)}: NumPy dtype {array.dtype} has no tensor equivalent"
        ) from exc


def _numpy_scalar(value: np.generic, path: tuple[str, ...]) -> dict:
    if value.dtype.kind not in "biuf":
        raise CheckpointError(
            f"state at {_where(path)}: NumPy scalar of dtype {value.dtype} is not supported"
        )
    item = value.item()
    encoded = repr(item) if isinstance(item, float) and not math.isfinite(item) else item
    return {TAG: "npscalar", "dtype": value.dtype.str, "v": encoded}


def _decode(node: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    if isinstance(node, list):
        return [_decode(v, tensors) for v in node]
    if not isinstance(node, dict):
        return node
    tag = node.get(TAG)
    if tag is None:
        return {k: _decode(v, tensors) for k, v in node.items()}
    if tag == "dict":
        return {_decode(k, tensors): _decode(v, tensors) for k, v in node["items"]}
    if tag == "odict":
        ordered = OrderedDict((_decode(k, tensors), _decode(v, tensors)) for k, v in node["items"])
        if "metadata" in node:
            ordered._metadata = _decode(node["metadata"], tensors)  # type: ignore[attr-defined]
        return ordered
    if tag == "tuple":
        return tuple(_decode(v, tensors) for v in node["v"])
    if tag == "tensor":
        return tensors[node["key"]]
    if tag == "ndarray":
        return tensors[node["key"]].numpy()
    if tag == "float":
        return float(node["v"])
    if tag == "bytes":
        return base64.b64decode(node["b64"], validate=True)
    if tag == "npscalar":
        value = node["v"]
        return np.dtype(node["dtype"]).type(float(value) if isinstance(value, str) else value)
    raise ValueError(f"unknown tag {tag!r}")
