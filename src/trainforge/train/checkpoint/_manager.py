"""`CheckpointManager`: the one object a trainer talks to about checkpoints."""

from __future__ import annotations

import builtins
import logging
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainforge.config import CheckpointSpec
from trainforge.errors import CheckpointError
from trainforge.train.checkpoint._format import (
    MANIFEST,
    CheckpointInfo,
    Scan,
    copy_checkpoint,
    dir_name,
    load_checkpoint,
    manifest_checks,
    scan,
    step_of,
    write_checkpoint,
)
from trainforge.train.checkpoint._policy import is_due, select_deletions
from trainforge.train.checkpoint._sharded import load_shards, save_shards, verify_shards
from trainforge.train.checkpoint._snapshot import SnapshotArena, in_place, state_nbytes
from trainforge.train.checkpoint._storage import open_storage
from trainforge.train.checkpoint._warnings import CheckpointWarning

log = logging.getLogger("trainforge")

if TYPE_CHECKING:
    import torch.distributed as dist

Callback = Callable[[CheckpointInfo], None]


def _leaves(tree: Any) -> Iterator[Any]:
    if isinstance(tree, Mapping):
        for value in tree.values():
            yield from _leaves(value)
    elif isinstance(tree, (list, tuple)):
        for value in tree:
            yield from _leaves(value)
    else:
        yield tree


def _numbers(metrics: Mapping[str, float] | None) -> dict[str, float]:
    """A copy of `metrics` as floats, taken on the caller's thread."""
    try:
        return {str(k): float(v) for k, v in (metrics or {}).items()}
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint metrics must be numbers: {exc}") from exc


@dataclass
class _Outcome:
    """What one background job did; delivered to callbacks on the caller's thread."""

    saved: CheckpointInfo | None = None
    deleted: list[CheckpointInfo] = field(default_factory=list)
    error: Exception | None = None


class CheckpointManager:
    """Saves, lists, loads and prunes the checkpoints of one run at one location.

    `location` is a folder or `s3://bucket/prefix` (`storage_options` go to s3fs: credentials,
    `client_kwargs={"endpoint_url": ...}`). Checkpoints are `step-<step:010d>/` folders whose
    manifest is written last; anything without a valid manifest is skipped with a
    `CheckpointWarning`.

    Threads: call every method from one thread (the training loop). An asynchronous save copies
    the tensors to CPU memory on that thread, then a single background thread writes them and
    applies retention; at most one save is in flight, a second waits for the first. An error of
    the background thread is raised as `CheckpointError` by the next call, which then does
    nothing else (a later call works normally). `on_saved(info)` runs after a checkpoint is
    committed, `on_deleted(info)` after storage confirmed a deletion; both run on the caller's
    thread, from whichever call collects the finished job (`maybe_save`, `save`, `wait`, ...).
    When a folder left without a manifest is removed, `on_deleted` gets an info with only `step`
    and `uri`. If the process dies in between, storage is right and a record may lag: reconcile
    with `list()`.

    Pins: inside `with manager.pinned(step):` retention (this manager's saves and `gc`) keeps
    the checkpoint of `step`, whatever the policy says; a pin holds in this process only.

    Sharded checkpoints (`save_sharded`, `load_sharded`): every rank of a process group has a
    manager on the same location and calls these together; each rank writes its own shards,
    rank 0 the rest, the manifest and retention, and only rank 0 gets `on_saved` and
    `on_deleted` (a callback on other ranks is never called).

    One writer per location. The manager keeps its CPU copy of the state between asynchronous
    saves (reused by the next one); the states `load` returns belong to the caller.

    >>> import tempfile, torch
    >>> folder, model = tempfile.TemporaryDirectory(), torch.nn.Linear(2, 1)
    >>> manager = CheckpointManager(folder.name, CheckpointSpec(every_n_steps=100), "r1")
    >>> manager.maybe_save(100, 0, elapsed=12.0, state_fn=lambda: {"model": model.state_dict()})
    True
    >>> manager.wait().step
    100
    >>> state, info = manager.load()
    >>> model.load_state_dict(state["model"])
    <All keys matched successfully>
    >>> manager.close(); folder.cleanup()
    """

    def __init__(
        self,
        location: str | Path,
        policy: CheckpointSpec | None = None,
        run_id: str | None = None,
        *,
        storage_options: dict[str, Any] | None = None,
        on_saved: Callback | None = None,
        on_deleted: Callback | None = None,
    ) -> None:
        self.policy = policy or CheckpointSpec()
        self.run_id = run_id
        self._storage = open_storage(location, storage_options)
        self._on_saved = on_saved
        self._on_deleted = on_deleted
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future[_Outcome] | None = None
        self._arena = SnapshotArena()
        self._last_step: int | None = None
        self._last_elapsed = 0.0
        self._pins: Counter[int] = Counter()
        self._pins_lock = threading.Lock()
        self._staging: Any = None  # DCP's stager, made by the first async sharded save

    @property
    def location(self) -> str:
        """Where the checkpoints live (a folder path or URI)."""
        return self._storage.uri

    def maybe_save(
        self,
        step: int,
        epoch: int | None,
        elapsed: float,
        state_fn: Callable[[], Mapping[str, Any]],
        metrics: Mapping[str, float] | None = None,
        epoch_end: bool = False,
    ) -> bool:
        """Save `state_fn()` if the policy asks for it at `step`; return whether it did.

        Call it after every optimizer step and at each epoch end. `elapsed` is seconds on the
        caller's clock (e.g. since training started) for `every_n_minutes`. `state_fn` is only
        called when a save is due.
        """
        self._collect()
        due = is_due(
            self.policy,
            step=step,
            elapsed=elapsed,
            epoch_end=epoch_end,
            last_step=self._last_step,
            last_elapsed=self._last_elapsed,
        )
        if due:
            self.save(step, state_fn(), epoch=epoch, metrics=metrics)
            self._last_elapsed = elapsed
        return due

    def save(
        self,
        step: int,
        state: Mapping[str, Any],
        *,
        epoch: int | None = None,
        metrics: Mapping[str, float] | None = None,
        blocking: bool | None = None,
    ) -> None:
        """Save `state` as the checkpoint of `step` (`blocking` None: `not policy.async_save`).

        `state` is a mapping such as `{"model": ..., "optimizer": ..., "rng": ...}` of tensors,
        NumPy arrays, scalars, str, bytes, lists, tuples and dicts. An unstorable value raises
        `CheckpointError` here, naming its path. Asynchronous: returns once the state is copied;
        the state may then change freely. Blocking: returns once the checkpoint is committed.
        """
        # the codec imports torch: only saving encodes a state; listing and pruning import none
        from trainforge.train.checkpoint._codec import encode

        self._collect()
        if not isinstance(state, Mapping):
            raise CheckpointError(f"checkpoint state must be a mapping, got {type(state)}")
        tree, tensors = encode(state)
        meta = {"step": step, "epoch": epoch, "run_id": self.run_id, "metrics": _numbers(metrics)}
        self.wait()
        if blocking if blocking is not None else not self.policy.async_save:
            self._deliver(self._job(tree, in_place(tensors), meta))
        else:
            copies = self._arena.copy(tensors)
            self._pending = self._worker().submit(self._job, tree, copies, meta)
        self._last_step = step

    def save_sharded(
        self,
        step: int,
        shards: Mapping[str, Any],
        rest: Mapping[str, Any],
        group: dist.ProcessGroup,
        *,
        epoch: int | None = None,
        metrics: Mapping[str, float] | None = None,
        blocking: bool | None = None,
    ) -> None:
        """Save a sharded checkpoint of `step` (every rank of `group` calls it at the same
        step): `shards` is this rank's part of the state for `torch.distributed.checkpoint`
        (DTensors), `rest` the rest of the state as `save` takes it (rank 0's is kept).

        Asynchronous (`blocking` None: `policy.async_save`): the shards and rank 0's rest are
        copied to CPU memory, then written on the background thread, whose collectives run
        on `group` (keep it for checkpoints: a CPU backend, not used by training). The
        checkpoint commits when every rank's shards are written and checksummed.
        """
        import torch.distributed as dist

        from trainforge.train.checkpoint._codec import encode

        self._collect()
        leader = dist.get_rank(group) == 0
        tree, tensors = encode(rest) if leader else (None, {})
        meta = {"step": step, "epoch": epoch, "run_id": self.run_id, "metrics": _numbers(metrics),
                "world_size": dist.get_world_size(group)}
        self.wait()
        if blocking if blocking is not None else not self.policy.async_save:
            outcome = self._sharded_job(shards, tree, in_place(tensors), meta, group)
            self._deliver(outcome)
        else:
            staged = self._stager(shards).stage(dict(shards))
            copies = self._arena.copy(tensors)
            self._pending = self._worker().submit(self._sharded_job, staged, tree, copies,
                                                  meta, group)
        self._last_step = step

    def load_sharded(
        self, target: dict[str, Any], group: dist.ProcessGroup
    ) -> tuple[dict[str, Any], CheckpointInfo]:
        """Load the newest sharded checkpoint that verifies (every rank of `group` calls it):
        fill `target` (this rank's layout of the shards, as `save_sharded` took them, at this
        world size) in place and return the rest of the state and the checkpoint's info.

        The world size that wrote it may differ from `group`'s: the shards are resharded as
        they are read. Each rank checks its share of the files before any is read; a
        checkpoint that fails is skipped on every rank with a `CheckpointWarning`, as `load`
        skips one. `CheckpointError` when none is left or the newest is not sharded.
        """
        self.wait()
        for candidate in self._scan().valid[::-1]:
            if candidate.sharded_by is None:
                raise CheckpointError(
                    f"{candidate.uri}: a full checkpoint, not a sharded one; load it with "
                    "`load` (every rank reads the whole state)")
            started = time.perf_counter()
            try:
                checks = manifest_checks(self._storage, candidate.name)
                verify_shards(self._storage, candidate.name, checks, group)
            except CheckpointError as exc:
                warnings.warn(f"{exc}; falling back to an older checkpoint", CheckpointWarning,
                              stacklevel=2)
                continue
            rest, info = load_checkpoint(self._storage, candidate.name)
            load_shards(self._storage, candidate.name, target, group)
            log.info("loaded the sharded checkpoint of step %d (written by %d processes) in "
                     "%.2fs", info.step, info.sharded_by, time.perf_counter() - started)
            self._last_step = info.step
            return rest, info
        raise CheckpointError(f"no valid checkpoint under {self.location}")

    def prepare(self, state: Mapping[str, Any], *, headroom: float = 0.0) -> None:
        """Make ready, on a background thread, the CPU memory an asynchronous save of a state
        like `state` copies into (its tensors' sizes, plus `headroom` as a fraction for what
        `state` lacks), so the first asynchronous save stalls training no longer than the later
        ones. Returns at once; does nothing when saves are blocking."""
        if not self.policy.async_save:
            return
        from trainforge.train.checkpoint._codec import encode

        _, tensors = encode(state)
        pinned = any(t.device.type == "cuda" for t in tensors.values())
        self._arena.reserve(int(state_nbytes(tensors) * (1 + headroom)), pinned)

    def wait(self) -> CheckpointInfo | None:
        """Block until the save in flight is done; return what it committed (None if none)."""
        if self._pending is None:
            return None
        self._pending.exception()  # waits; the outcome carries any error
        return self._collect()

    def latest(self) -> CheckpointInfo | None:
        """The newest checkpoint whose manifest is valid and files have the right sizes."""
        valid = self.list()
        return valid[-1] if valid else None

    def list(self) -> list[CheckpointInfo]:
        """Valid checkpoints, oldest first; waits for a save in flight, warns about the rest."""
        self.wait()
        return self._scan().valid

    def load(self, info: CheckpointInfo | None = None) -> tuple[dict[str, Any], CheckpointInfo]:
        """The verified state of `info`, or of the newest checkpoint that verifies.

        Every file's checksum is checked before it is parsed. With `info` None, a checkpoint
        that fails is skipped with a `CheckpointWarning` naming it and why, and the previous one
        is tried; `CheckpointError` when none is left. With `info` given, failure raises.
        Afterwards `maybe_save` does not save the loaded step again.
        """
        self.wait()
        candidates = [info] if info is not None else self._scan().valid[::-1]
        for candidate in candidates:
            if candidate.sharded_by is not None:
                raise CheckpointError(
                    f"{candidate.uri}: a sharded checkpoint of {candidate.sharded_by} "
                    "processes; load it with `load_sharded` under a process group")
            try:
                state, loaded = load_checkpoint(self._storage, candidate.name)
            except CheckpointError as exc:
                if info is not None:
                    raise
                warnings.warn(
                    f"{exc}; falling back to an older checkpoint", CheckpointWarning, stacklevel=2
                )
                continue
            self._last_step = loaded.step
            return state, loaded
        raise CheckpointError(f"no valid checkpoint under {self.location}")

    def copy_from(self, source: CheckpointManager, info: CheckpointInfo) -> CheckpointInfo:
        """Copy `source`'s checkpoint `info` here, byte for byte, as this location's checkpoint
        of that step; return the copy (after `on_saved`).

        The source files are verified against their manifest before anything is written and the
        copy is verified after (`CheckpointError` names the file). Retention is not applied:
        the copy is the newest checkpoint here until the next save.
        """
        self.wait()
        source.wait()
        copied = copy_checkpoint(source._storage, info.name, self._storage)
        self._last_step = copied.step
        self._deliver(_Outcome(saved=copied))
        return copied

    @contextmanager
    def pinned(self, step: int) -> Iterator[None]:
        """Keep the checkpoint of `step` from retention inside the block (pins nest)."""
        with self._pins_lock:
            self._pins[step] += 1
        try:
            yield
        finally:
            with self._pins_lock:
                self._pins[step] -= 1
                if self._pins[step] <= 0:
                    del self._pins[step]

    def gc(
        self, keep_last: int | None = None, keep_best: int | None = None
    ) -> builtins.list[CheckpointInfo]:  # `list` is the method above, in this class's scope
        """Apply retention now (defaults: the policy's); return what was deleted.

        Keeps the `keep_last` newest and the `keep_best` best by `policy.monitor`; the best are
        never deleted by the last-K rule. Each deletion removes the manifest first, so a
        checkpoint is never half valid; a failed run raises `CheckpointError` and can be
        repeated, which also removes folders left without a manifest older than the newest
        valid checkpoint (newer ones may be a save in progress).
        """
        self.wait()
        keep_last = self.policy.keep_last if keep_last is None else keep_last
        keep_best = self.policy.keep_best if keep_best is None else keep_best
        outcome = _Outcome()
        self._retain(outcome, keep_last, keep_best)
        self._deliver(outcome)
        return outcome.deleted

    def close(self) -> None:
        """Wait for the save in flight and stop the background thread."""
        try:
            self.wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            if self._staging is not None:
                self._staging.close()
                self._staging = None

    def __enter__(self) -> CheckpointManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _worker(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="trainforge-checkpoint")
        return self._executor

    def _stager(self, shards: Mapping[str, Any]) -> Any:
        """DCP's stager, which copies shards to CPU memory it keeps for the next save."""
        from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions

        if self._staging is None:
            cuda = any(getattr(t, "device", None) is not None and t.device.type == "cuda"
                       for t in _leaves(shards))
            self._staging = DefaultStager(StagingOptions(
                use_pinned_memory=cuda, use_shared_memory=False, use_async_staging=False,
                use_non_blocking_copy=False))
        return self._staging

    def _sharded_job(self, shards: Mapping[str, Any], tree: Any, tensors: dict, meta: dict,
                     group: dist.ProcessGroup) -> _Outcome:
        """Write every rank's shards, then (rank 0) the rest, the manifest and retention."""
        import torch.distributed as dist

        outcome = _Outcome()
        leader = dist.get_rank(group) == 0
        try:
            files = save_shards(self._storage, dir_name(meta["step"]), shards, group)
            if leader:
                outcome.saved = write_checkpoint(self._storage, tree, tensors, meta, files)
        except Exception as exc:
            outcome.error = CheckpointError(
                f"saving step {meta['step']} to {self.location} failed: {exc}")
            outcome.error.__cause__ = exc
            return outcome
        if leader:
            self._retain(outcome, self.policy.keep_last, self.policy.keep_best)
        return outcome

    def _job(self, tree: Any, tensors: dict, meta: dict) -> _Outcome:
        """Write one checkpoint, then apply the policy's retention (any thread)."""
        outcome = _Outcome()
        try:
            outcome.saved = write_checkpoint(self._storage, tree, tensors, meta)
        except Exception as exc:
            outcome.error = CheckpointError(
                f"saving step {meta['step']} to {self.location} failed: {exc}"
            )
            outcome.error.__cause__ = exc
            return outcome
        self._retain(outcome, self.policy.keep_last, self.policy.keep_best)
        return outcome

    def _retain(self, outcome: _Outcome, keep_last: int | None, keep_best: int) -> None:
        """Delete what retention drops and old unfinished folders; record it in `outcome`."""
        try:
            found = scan(self._storage)
            victims = select_deletions(
                found.valid,
                keep_last=keep_last,
                keep_best=keep_best,
                monitor=self.policy.monitor,
                mode=self.policy.mode,
                pinned=self._pinned_steps(),
            )
            for info in victims:
                self._storage.delete(f"{info.name}/{MANIFEST}")
                self._storage.delete_dir(info.name)
                outcome.deleted.append(info)
            newest = found.valid[-1].step if found.valid else -1
            for name in found.unfinished:
                step = step_of(name)
                if step is not None and step < newest:
                    self._storage.delete_dir(name)
                    outcome.deleted.append(CheckpointInfo(step, self._storage.uri_of(name)))
        except Exception as exc:
            outcome.error = CheckpointError(f"deleting checkpoints under {self.location}: {exc}")
            outcome.error.__cause__ = exc

    def _pinned_steps(self) -> frozenset[int]:
        with self._pins_lock:
            return frozenset(self._pins)

    def _scan(self) -> Scan:
        found = scan(self._storage)
        for reason in found.invalid.values():
            warnings.warn(f"{reason}; checkpoint skipped", CheckpointWarning, stacklevel=3)
        return found

    def _collect(self) -> CheckpointInfo | None:
        """Deliver the finished background job, if any; raise its error."""
        if self._pending is None or not self._pending.done():
            return None
        outcome, self._pending = self._pending.result(), None
        return self._deliver(outcome)

    def _deliver(self, outcome: _Outcome) -> CheckpointInfo | None:
        if outcome.saved is not None and self._on_saved is not None:
            self._on_saved(outcome.saved)
        for info in outcome.deleted:
            if self._on_deleted is not None:
                self._on_deleted(info)
        if outcome.error is not None:
            raise outcome.error
        return outcome.saved
