"""The on-storage format of one checkpoint, and how it is written, listed and verified.

    <location>/step-<global_step:010d>/
        tensors.safetensors   every tensor of the state (safetensors, written here, streamed)
        state.json            everything else (the tree of `_codec.encode`)
        MANIFEST.json         written last: the commit marker

A sharded checkpoint (format version 2, `layout: sharded`) holds each rank's shards of the
model and optimizer states beside those two files (`_sharded.py`); its manifest lists every
rank's files and its `world_size`, and it is valid only when each of those ranks' files is there.

The manifest holds the format name and version, run id, step, epoch, metrics, creation time, the
hash algorithm and chunk size (`_checksum.py`) and, per file, its size and checksum. A folder
without a manifest, with a manifest that does not parse, or whose files do not match it is not a
checkpoint. Checksums are computed while the bytes are written, and verified before the bytes are
deserialized; loading reads only safetensors and JSON, so it never runs code.

Every function here is stateless and thread-safe; the storage given decides where bytes go.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt, ValidationError

from trainforge.errors import CheckpointError
from trainforge.train.checkpoint._checksum import CHUNK_BYTES, DEFAULT_HASH, ChunkedHasher, checksum
from trainforge.train.checkpoint._sharded import FileEntry, is_shard_file, shard_rank
from trainforge.train.checkpoint._storage import Check, Storage

# torch only where tensors are handled (the codec imports it): listing and verifying
# checkpoints import none
if TYPE_CHECKING:
    import torch

FORMAT = "trainforge-checkpoint"
FORMAT_VERSION = 1
SHARDED_FORMAT_VERSION = 2
MANIFEST = "MANIFEST.json"
TENSORS = "tensors.safetensors"
STATE = "state.json"


@dataclass(frozen=True)
class CheckpointInfo:
    """One committed checkpoint, as its manifest describes it (frozen; hashable)."""

    step: int
    uri: str
    epoch: int | None = None
    run_id: str | None = None
    metrics: Mapping[str, float | None] = field(default_factory=dict, hash=False)
    created_at: str | None = None
    size_bytes: int = 0
    sharded_by: int | None = None  # sharded: the world size that wrote it; None: a full state

    @property
    def name(self) -> str:
        """The checkpoint's folder name, `step-<step:010d>`."""
        return dir_name(self.step)

    @property
    def metric_values(self) -> dict[str, float]:
        """`metrics` as floats: a value that was not finite when saved (stored as null) is NaN."""
        return {key: math.nan if value is None else value for key, value in self.metrics.items()}


@dataclass(frozen=True)
class Scan:
    """What a location holds: valid checkpoints by step, and folders that are not checkpoints."""

    valid: list[CheckpointInfo]
    invalid: dict[str, str]  # folder name -> why it is not a valid checkpoint, naming it
    unfinished: list[str]  # folders without a manifest: an interrupted save or deletion


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    size: NonNegativeInt
    checksum: str


class _Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: Literal["trainforge-checkpoint"]
    format_version: Literal[1, 2]
    layout: Literal["full", "sharded"] = "full"
    world_size: PositiveInt = 1
    run_id: str | None
    step: NonNegativeInt
    epoch: int | None
    metrics: dict[str, float | None]
    created_at: str
    hash: Literal["xxh3_128", "sha256"]
    hash_chunk_bytes: PositiveInt
    files: dict[str, _File]


def dir_name(step: int) -> str:
    return f"step-{step:010d}"


def step_of(folder: str) -> int | None:
    """The step of a checkpoint folder name, None for any other name."""
    digits = folder.removeprefix("step-")
    if digits.isascii() and digits.isdigit() and dir_name(int(digits)) == folder:
        return int(digits)
    return None


def write_checkpoint(
    storage: Storage,
    tree: Any,
    tensors: Mapping[str, torch.Tensor],
    meta: Mapping[str, Any],
    shards: Mapping[str, FileEntry] | None = None,
) -> CheckpointInfo:
    """Write one checkpoint: data files first, the manifest last; return what was committed.

    `tensors` must be contiguous CPU tensors that nobody modifies until this returns. `meta`
    holds step, epoch, run_id and metrics (and `world_size` with `shards`). Saving a step that
    exists replaces it: its manifest is deleted first, so in between that step is invalid and
    the older checkpoints stay valid. `shards`: the files every rank wrote into the folder
    already (`save_shards`), listed in the manifest of a sharded checkpoint.
    """
    name = dir_name(meta["step"])
    storage.delete(f"{name}/{MANIFEST}")
    files = {
        TENSORS: _write_hashed(storage, f"{name}/{TENSORS}", _safetensors_chunks(tensors)),
        STATE: _write_hashed(storage, f"{name}/{STATE}", [_state_document(tree)]),
    }
    for file_name, (size, digest) in (shards or {}).items():
        files[file_name] = _File(size=size, checksum=digest)
    manifest = _Manifest(
        format=FORMAT,
        format_version=FORMAT_VERSION if shards is None else SHARDED_FORMAT_VERSION,
        layout="full" if shards is None else "sharded",
        world_size=meta.get("world_size", 1) if shards is not None else 1,
        run_id=meta["run_id"],
        step=meta["step"],
        epoch=meta["epoch"],
        metrics={k: _finite_or_none(v) for k, v in meta["metrics"].items()},
        created_at=datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        hash=DEFAULT_HASH,
        hash_chunk_bytes=CHUNK_BYTES,
        files=files,
    )
    storage.write(f"{name}/{MANIFEST}", [manifest.model_dump_json(indent=2).encode()])
    return _info(storage, name, manifest)


def scan(storage: Storage) -> Scan:
    """Every `step-*` folder of the location, sorted by step; cheap: manifests and sizes only."""
    by_dir: dict[str, dict[str, int]] = {}
    steps: dict[str, int] = {}
    for path, size in storage.list_files().items():
        folder, file_name = path.split("/", 1)
        step = step_of(folder)
        if step is not None:
            steps[folder] = step
            by_dir.setdefault(folder, {})[file_name] = size
    valid, invalid, unfinished = [], {}, []
    for folder in sorted(by_dir, key=steps.__getitem__):
        if MANIFEST not in by_dir[folder]:
            unfinished.append(folder)
            reason = f"no {MANIFEST} (an interrupted save or deletion)"
            invalid[folder] = f"{storage.uri_of(folder)}: {reason}"
            continue
        try:
            valid.append(_info(storage, folder, _checked_manifest(storage, folder, by_dir[folder])))
        except CheckpointError as exc:
            invalid[folder] = str(exc)
    return Scan(valid, invalid, unfinished)


def load_checkpoint(storage: Storage, name: str) -> tuple[Any, CheckpointInfo]:
    """The verified state of checkpoint folder `name`; `CheckpointError` says why not.

    Each file's size and checksum are checked against the manifest before it is parsed; the
    state's tensors are CPU tensors in memory of their own.
    """
    from trainforge.train.checkpoint._codec import decode

    manifest = _read_manifest(storage, name)
    state_bytes = storage.read(f"{name}/{STATE}")
    _checker(storage, name, STATE, manifest)(state_bytes)
    tensors = storage.read_tensors(f"{name}/{TENSORS}", _checker(storage, name, TENSORS, manifest))
    try:
        document = json.loads(state_bytes)
        if document.get("format") != FORMAT:
            raise ValueError(f"format is {document.get('format')!r}, expected {FORMAT!r}")
        state = decode(document["tree"], tensors)
    except (ValueError, KeyError, AttributeError, RecursionError, CheckpointError) as exc:
        raise CheckpointError(f"{storage.uri_of(f'{name}/{STATE}')}: {exc}") from exc
    return state, _info(storage, name, manifest)


def copy_checkpoint(source: Storage, name: str, target: Storage) -> CheckpointInfo:
    """Copy checkpoint folder `name` from `source` to `target` byte for byte; return the copy.

    Each file is checked against the source manifest (size and checksum) before anything is
    written; the target's files are written first and the same manifest last, as a save writes
    them (a checkpoint of that step already there is replaced, its manifest deleted first); the
    copy is read back and checked against the manifest before this returns. `CheckpointError`
    names the file that is missing, truncated or corrupted, on either side. The files are held
    in memory once each.
    """
    manifest = _read_manifest(source, name)
    manifest_bytes = source.read(f"{name}/{MANIFEST}")
    contents = {}
    for file_name in manifest.files:
        contents[file_name] = _read_file(source, f"{name}/{file_name}")
        _checker(source, name, file_name, manifest)(contents[file_name])
    target.delete(f"{name}/{MANIFEST}")
    for file_name, data in contents.items():
        if is_shard_file(file_name):
            target.write_shard_file(f"{name}/{file_name}", data)
        else:
            target.write(f"{name}/{file_name}", [data])
    target.write(f"{name}/{MANIFEST}", [manifest_bytes])
    copied = _read_manifest(target, name)
    for file_name in copied.files:
        _checker(target, name, file_name, copied)(_read_file(target, f"{name}/{file_name}"))
    return _info(target, name, copied)


def manifest_checks(storage: Storage, name: str) -> dict[str, Check]:
    """For each file the manifest of checkpoint folder `name` lists, the check of its bytes
    (size and checksum); `CheckpointError` when the manifest is not valid."""
    manifest = _read_manifest(storage, name)
    return {file_name: _checker(storage, name, file_name, manifest)
            for file_name in manifest.files}


def _read_file(storage: Storage, path: str) -> bytes:
    file_name = path.rsplit("/", 1)[1]
    return storage.read_shard_file(path) if is_shard_file(file_name) else storage.read(path)


def _info(storage: Storage, name: str, manifest: _Manifest) -> CheckpointInfo:
    return CheckpointInfo(
        step=manifest.step,
        uri=storage.uri_of(name),
        epoch=manifest.epoch,
        run_id=manifest.run_id,
        metrics=dict(manifest.metrics),
        created_at=manifest.created_at,
        size_bytes=sum(f.size for f in manifest.files.values()),
        sharded_by=manifest.world_size if manifest.layout == "sharded" else None,
    )


def _read_manifest(storage: Storage, name: str) -> _Manifest:
    where = storage.uri_of(f"{name}/{MANIFEST}")
    try:
        raw = json.loads(storage.read(f"{name}/{MANIFEST}"))
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"{where}: not valid JSON ({exc})") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise CheckpointError(f"{where}: not a {FORMAT} manifest")
    if raw.get("format_version") not in (FORMAT_VERSION, SHARDED_FORMAT_VERSION):
        raise CheckpointError(
            f"{where}: unknown format version {raw.get('format_version')!r} "
            f"(this trainforge reads versions {FORMAT_VERSION} and {SHARDED_FORMAT_VERSION})"
        )
    try:
        manifest = _Manifest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise CheckpointError(f"{where}: malformed manifest: {problems}") from exc
    if manifest.step != step_of(name) or not {TENSORS, STATE} <= set(manifest.files):
        raise CheckpointError(
            f"{where}: manifest names step {manifest.step} and files {sorted(manifest.files)}; "
            f"expected step {step_of(name)} and files {sorted([STATE, TENSORS])}"
        )
    problem = _layout_problem(manifest)
    if problem:
        raise CheckpointError(f"{where}: {problem}")
    return manifest


def _layout_problem(manifest: _Manifest) -> str | None:
    """What is wrong with the manifest's files for its layout, None when nothing is."""
    outside = sorted(f for f in manifest.files if "/" in f or "\\" in f or f in ("", ".", ".."))
    if outside:
        return f"files outside the checkpoint folder {outside}"
    others = sorted(set(manifest.files) - {TENSORS, STATE})
    sharded = manifest.layout == "sharded"
    if sharded != (manifest.format_version == SHARDED_FORMAT_VERSION):
        return (f"layout {manifest.layout!r} with format version {manifest.format_version}; "
                f"a sharded checkpoint is version {SHARDED_FORMAT_VERSION}, a full one "
                f"version {FORMAT_VERSION}")
    if not sharded:
        return f"unexpected files {others} in a full checkpoint" if others else None
    strays = [f for f in others if not is_shard_file(f)]
    if strays:
        return f"unexpected files {strays} in a sharded checkpoint"
    ranks = {shard_rank(f) for f in others}  # None: DCP's metadata
    if ranks != {*range(manifest.world_size), None}:
        return (f"a sharded checkpoint of {manifest.world_size} processes lists shard files of "
                f"ranks {sorted(r for r in ranks if r is not None)} and "
                f"{'a' if None in ranks else 'no'} DCP metadata file; expected files of ranks "
                f"0..{manifest.world_size - 1} and the metadata")
    return None


def _checked_manifest(storage: Storage, name: str, sizes: Mapping[str, int]) -> _Manifest:
    manifest = _read_manifest(storage, name)
    for file_name, entry in manifest.files.items():
        actual = sizes.get(file_name)
        if actual != entry.size:
            found = "missing" if actual is None else f"{actual} bytes"
            raise CheckpointError(
                f"{storage.uri_of(f'{name}/{file_name}')}: {found}, manifest says {entry.size} "
                "bytes (truncated or replaced)"
            )
    return manifest


def _checker(storage: Storage, name: str, file_name: str, manifest: _Manifest) -> Check:
    """A check that raises `CheckpointError` unless bytes match the manifest's size and hash."""
    entry = manifest.files[file_name]
    where = storage.uri_of(f"{name}/{file_name}")

    def check(data: memoryview | bytes) -> None:
        if len(data) != entry.size:
            raise CheckpointError(
                f"{where}: {len(data)} bytes, manifest says {entry.size} (truncated or replaced)"
            )
        if checksum(data, manifest.hash, manifest.hash_chunk_bytes) != entry.checksum:
            raise CheckpointError(f"{where}: {manifest.hash} checksum mismatch (corrupted)")

    return check


def _write_hashed(storage: Storage, path: str, chunks: Iterable[memoryview | bytes]) -> _File:
    hasher = ChunkedHasher()

    def hashed() -> Iterator[memoryview | bytes]:
        for chunk in chunks:
            hasher.update(chunk)
            yield chunk

    storage.write(path, hashed())
    return _File(size=hasher.size, checksum=hasher.hexdigest())


def _safetensors_chunks(tensors: Mapping[str, torch.Tensor]) -> Iterator[memoryview | bytes]:
    """A safetensors file as chunks: the header, then each tensor's memory (no copies)."""
    header: dict[str, Any] = {}
    views = []
    offset = 0
    dtypes = _dtypes()
    for key, tensor in tensors.items():
        if tensor.dtype not in dtypes:
            raise CheckpointError(f"tensor {key!r}: dtype {tensor.dtype} cannot be saved")
        view = _raw_bytes(tensor)
        header[key] = {
            "dtype": dtypes[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + view.nbytes],
        }
        offset += view.nbytes
        views.append(view)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # safetensors aligns the data to 8 bytes
    yield struct.pack("<Q", len(text)) + text
    yield from views


@cache
def _dtypes() -> dict[torch.dtype, str]:
    """The safetensors name of each dtype a checkpoint can hold."""
    import torch

    return {
        torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
        torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
        torch.uint64: "U64", torch.uint32: "U32", torch.uint16: "U16", torch.uint8: "U8",
        torch.bool: "BOOL", torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2",
        torch.complex64: "C64",
    }  # fmt: skip


def _raw_bytes(tensor: torch.Tensor) -> memoryview:
    """The memory of a contiguous CPU tensor, without a copy."""
    import torch

    if tensor.numel() == 0:
        return memoryview(b"")
    return tensor.reshape(-1).view(torch.uint8).numpy().data


def _state_document(tree: Any) -> bytes:
    document = {"format": FORMAT, "format_version": FORMAT_VERSION, "tree": tree}
    return json.dumps(document, allow_nan=False, separators=(",", ":")).encode()


def _finite_or_none(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None
