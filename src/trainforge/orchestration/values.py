"""The value store: what steps pass each other, encoded by a codec and kept content-addressed
in the object store, so a step can run in another process and its outputs can be reused.

    frames (pandas)              parquet           pyarrow, the frame's index and dtypes kept;
                                                   LZ4 (half snappy's write time here)
    fitted feature pipelines     feature-pipeline  their canonical JSON
    tensors, dicts of tensors    safetensors       (a model's weights: `model.state_dict()`)
    small plain values           json              None, bool, int, float, str, lists, dicts
    objects of registered types  struct            frames, arrays, tensors and plain fields
                                                   in one value (`value_types.py`)

A value is stored under `values/<sha256[:2]>/<sha256>.<suffix>` of its encoded bytes, once
whatever produced it; its `ValueRef` (codec, digest, size) is what step runs record, and the
digest is what a downstream step's cache key hashes. A value no codec takes (a live model, a
run handle, a registered type holding a callable) stays in the memory of the process that made
it: `put` returns None for it, and a step that consumes or produces one is not cached.

Reading checks the bytes against the digest, so a swapped or truncated object is refused
(`ValueStoreError` naming its key) rather than decoded.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from trainforge.errors import ObjectNotFound, ObjectStoreError, ValueStoreError
from trainforge.orchestration.value_types import DecodeContext, StructCodec, Unstorable
from trainforge.storage.objects import ObjectStore, open_object_store

if TYPE_CHECKING:
    from trainforge.session import Session

PREFIX = "values"


@dataclass(frozen=True)
class ValueRef:
    """Where a stored value is and how to decode it: what a step run records per output."""

    codec: str
    digest: str
    size: int

    @property
    def key(self) -> str:
        return f"{PREFIX}/{self.digest[:2]}/{self.digest}.{_codec(self.codec).suffix}"

    @staticmethod
    def digest_of(key: str) -> str:
        """The digest an object key of the value store names (`key`'s inverse)."""
        return key.rsplit("/", 1)[-1].split(".", 1)[0]

    def to_json(self) -> dict[str, Any]:
        return {"codec": self.codec, "digest": self.digest, "size": self.size}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ValueRef:
        return cls(str(data["codec"]), str(data["digest"]), int(data["size"]))


class Codec(Protocol):
    name: str
    suffix: str

    def accepts(self, value: Any) -> bool: ...

    def encode(self, value: Any) -> bytes: ...

    def decode(self, data: bytes, context: DecodeContext) -> Any: ...


class ParquetCodec:
    name = "parquet"
    suffix = "parquet"

    def accepts(self, value: Any) -> bool:
        pandas = sys.modules.get("pandas")
        return pandas is not None and isinstance(value, pandas.DataFrame)

    def encode(self, value: Any) -> bytes:
        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pandas(value), buffer, compression="lz4")
        return buffer.getvalue()

    def decode(self, data: bytes, context: DecodeContext) -> Any:
        import pyarrow.parquet as pq

        return pq.read_table(io.BytesIO(data)).to_pandas()


class FeaturePipelineCodec:
    name = "feature-pipeline"
    suffix = "json"

    def accepts(self, value: Any) -> bool:
        module = sys.modules.get("trainforge.features._pipeline")
        return module is not None and isinstance(value, module.FeaturePipeline)

    def encode(self, value: Any) -> bytes:
        return str(value.to_json()).encode()

    def decode(self, data: bytes, context: DecodeContext) -> Any:
        from trainforge.features import FeaturePipeline

        return FeaturePipeline.from_json(data.decode())


class SafetensorsCodec:
    """A tensor, or a dict of named tensors (a state dict), as safetensors; a single tensor is
    stored under the name `__tensor__`."""

    name = "safetensors"
    suffix = "safetensors"
    _SINGLE = "__tensor__"

    def accepts(self, value: Any) -> bool:
        torch = sys.modules.get("torch")
        if torch is None:
            return False
        if isinstance(value, torch.Tensor):
            return True
        return (isinstance(value, dict) and bool(value)
                and all(isinstance(k, str) and isinstance(v, torch.Tensor)
                        for k, v in value.items()))

    def encode(self, value: Any) -> bytes:
        import torch
        from safetensors.torch import save

        tensors = {self._SINGLE: value} if isinstance(value, torch.Tensor) else value
        return bytes(save({k: v.detach().cpu().contiguous() for k, v in tensors.items()}))

    def decode(self, data: bytes, context: DecodeContext) -> Any:
        from safetensors.torch import load

        tensors = load(data)
        return tensors[self._SINGLE] if set(tensors) == {self._SINGLE} else tensors


class JsonCodec:
    """Plain values that come back equal: None, bool, int, finite float, str, and lists and
    string-keyed dicts of them (a tuple would come back a list, so it is not taken)."""

    name = "json"
    suffix = "json"

    def accepts(self, value: Any) -> bool:
        return _plain(value)

    def encode(self, value: Any) -> bytes:
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()

    def decode(self, data: bytes, context: DecodeContext) -> Any:
        return json.loads(data)


def _plain(value: Any, depth: int = 0) -> bool:
    if depth > 32:
        return False
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


CODECS: tuple[Codec, ...] = (ParquetCodec(), FeaturePipelineCodec(), SafetensorsCodec(),
                             StructCodec(), JsonCodec())


def _codec(name: str) -> Codec:
    for codec in CODECS:
        if codec.name == name:
            return codec
    raise ValueStoreError(f"unknown value codec {name!r}; known: "
                          f"{', '.join(c.name for c in CODECS)}")


def codec_for(value: Any) -> Codec | None:
    """The codec that stores `value`, or None when it has to stay in memory."""
    return next((codec for codec in CODECS if codec.accepts(value)), None)


class ValueStore:
    """Values under `values/` of an object store; safe to share across threads. `context` is
    what its decoders get of the process decoding (the session's credentials)."""

    def __init__(self, objects: ObjectStore, context: DecodeContext | None = None) -> None:
        self.objects = objects
        self.context = context or DecodeContext()

    def put(self, value: Any, what: str = "value") -> ValueRef | None:
        """Store `value` (once per content) and return its reference; None when no codec
        takes it. `what` names it in errors ("step 'load' output 'frame'")."""
        codec = codec_for(value)
        if codec is None:
            return None
        try:
            data = codec.encode(value)
        except Unstorable:
            return None
        except Exception as exc:
            raise ValueStoreError(f"{what}: cannot be encoded as {codec.name}: {exc}") from exc
        ref = ValueRef(codec.name, hashlib.sha256(data).hexdigest(), len(data))
        try:
            if not self.objects.exists(ref.key):
                self.objects.write(ref.key, data)
        except ObjectStoreError as exc:
            raise ValueStoreError(f"{what}: cannot be stored: {exc}") from exc
        return ref

    def get(self, ref: ValueRef, what: str = "value") -> Any:
        """The value `ref` names, checked against its digest."""
        try:
            data = self.objects.read(ref.key)
        except ObjectNotFound as exc:
            raise ValueStoreError(f"{what}: {self.objects.uri_of(ref.key)} is gone from the "
                                  "value store") from exc
        except ObjectStoreError as exc:
            raise ValueStoreError(f"{what}: cannot be read: {exc}") from exc
        if hashlib.sha256(data).hexdigest() != ref.digest:
            raise ValueStoreError(f"{what}: {self.objects.uri_of(ref.key)} does not hash to "
                                  f"its name (sha256 {ref.digest}); it was changed after it "
                                  "was stored")
        try:
            return _codec(ref.codec).decode(data, self.context)
        except Exception as exc:
            raise ValueStoreError(f"{what}: {self.objects.uri_of(ref.key)} cannot be decoded "
                                  f"as {ref.codec}: {exc}") from exc

    def missing(self, refs: Sequence[ValueRef]) -> list[ValueRef]:
        """Those of `refs` whose objects are gone (a cache hit is only taken when none is)."""
        return [ref for ref in refs if not self.objects.exists(ref.key)]


def value_store(session: Session) -> ValueStore:
    """The value store under the session's artifact root (`<root>/values/`), decoding with the
    session's credentials."""
    return ValueStore(open_object_store(session.settings.artifact_root),
                      DecodeContext(session.credentials))
