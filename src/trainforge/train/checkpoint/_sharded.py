"""The shards of a sharded checkpoint: each rank's part of the model and optimizer states,
written and read by `torch.distributed.checkpoint` (DCP) inside the checkpoint's folder.

    <location>/step-<global_step:010d>/
        __<rank>_<n>.distcp   each rank's shards (DCP), written by that rank in parallel
        .metadata             DCP's index of the shards (written by rank 0 once all are)
        tensors.safetensors   the rest of the state, as a full checkpoint holds it (rank 0)
        state.json
        MANIFEST.json         rank 0, last: every rank's files with sizes and checksums

Every function here is collective: each rank of `group` calls it, in the same order, and each
gets the same outcome (an error on one rank is raised, with its message, on all of them), so no
rank waits for another that gave up. `group` is a process group with a CPU backend (gloo) kept
for checkpoints, so a save on a background thread does not interleave with training's
collectives. Checksums are verified before DCP reads any file; DCP's metadata is a pickle, so
unlike the full layout a sharded checkpoint is only as trustworthy as its storage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trainforge.errors import CheckpointError
from trainforge.train.checkpoint._checksum import CHUNK_BYTES, DEFAULT_HASH, checksum
from trainforge.train.checkpoint._storage import Check, Storage

# torch only in the collectives: listing and verifying checkpoints (shard names) import none
if TYPE_CHECKING:
    import torch.distributed as dist

DCP_METADATA = ".metadata"
FileEntry = tuple[int, str]  # size, checksum (DEFAULT_HASH, CHUNK_BYTES)


def is_shard_file(file_name: str) -> bool:
    """Whether a file of a checkpoint folder is DCP's (shards or metadata)."""
    return file_name == DCP_METADATA or shard_rank(file_name) is not None


def shard_rank(file_name: str) -> int | None:
    """The rank that wrote a `__<rank>_<n>.distcp` file, None for any other name."""
    if not (file_name.startswith("__") and file_name.endswith(".distcp")):
        return None
    rank = file_name[2:].split("_", 1)[0]
    return int(rank) if rank.isascii() and rank.isdigit() else None


def save_shards(
    storage: Storage, name: str, state: Mapping[str, Any], group: dist.ProcessGroup
) -> dict[str, FileEntry]:
    """Write this rank's shards of `state` into folder `name` and return every rank's files
    (size and checksum, DCP's metadata included), on every rank."""
    import torch.distributed as dist

    rank = dist.get_rank(group)
    try:
        import torch.distributed.checkpoint as dcp  # 0.6 s of imports: only when sharded

        dcp.save(dict(state), storage_writer=storage.dcp_writer(name), process_group=group)
    except Exception as exc:  # DCP raises on every rank, with every rank's failure
        raise CheckpointError(f"{storage.uri_of(name)}: writing the shards failed: {exc}") from exc
    mine: dict[str, FileEntry] | str
    try:
        mine = {file: _entry(storage, f"{name}/{file}") for file in storage.files_in(name)
                if shard_rank(file) == rank or (rank == 0 and file == DCP_METADATA)}
    except CheckpointError as exc:
        mine = str(exc)
    reports = _gather(mine, group)
    problems = [report for report in reports if isinstance(report, str)]
    if problems:
        raise CheckpointError("; ".join(problems))
    files: dict[str, FileEntry] = {}
    for report in reports:
        assert isinstance(report, dict)
        files.update(report)
    return files


def verify_shards(
    storage: Storage, name: str, checks: Mapping[str, Check], group: dist.ProcessGroup
) -> None:
    """Read and check every file of folder `name` that `checks` names (rank r the files
    r, r + W, ... in name order); `CheckpointError` on every rank, naming each bad file."""
    import torch.distributed as dist

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    problems = []
    for file in sorted(checks)[rank::world]:
        try:
            checks[file](storage.read_shard_file(f"{name}/{file}"))
        except CheckpointError as exc:
            problems.append(str(exc))
    found = [problem for report in _gather(problems, group) for problem in report]
    if found:
        raise CheckpointError("; ".join(found))


def load_shards(
    storage: Storage, name: str, target: dict[str, Any], group: dist.ProcessGroup
) -> None:
    """Fill `target` (this rank's layout, e.g. a fresh FSDP model's sharded state) in place
    from the shards of folder `name`, whatever the world size that wrote them."""
    try:
        import torch.distributed.checkpoint as dcp

        dcp.load(target, storage_reader=storage.dcp_reader(name), process_group=group)
    except Exception as exc:
        raise CheckpointError(f"{storage.uri_of(name)}: reading the shards failed: {exc}") from exc


def _entry(storage: Storage, path: str) -> FileEntry:
    data = storage.read_shard_file(path)
    return len(data), checksum(data, DEFAULT_HASH, CHUNK_BYTES)


def _gather(value: Any, group: dist.ProcessGroup) -> list[Any]:
    import torch.distributed as dist

    reports: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(reports, value, group=group)
    return reports
