"""The checkpoints of a tracked pipeline run, after the fact: listed and pruned on demand
(`trainforge checkpoints list / gc`).

A pipeline run records where its checkpoints live and the policy that saves them in the
`checkpoint` entry of its system namespace (credentials are never recorded: storage reached
from here authenticates through the environment or fsspec's configuration). Storage is the
truth and the store's records follow it: listing reconciles both ways (a valid checkpoint
without a record is recorded, a record whose checkpoint is no longer valid in storage is marked
deleted), and pruning marks a record deleted only once storage confirmed the deletion.

One writer per location: a run still `running` prunes its own checkpoints, so pruning it from
here is refused unless forced (its process is known to be gone).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from pydantic import ValidationError

from trainforge.config import CheckpointSpec
from trainforge.entities import CheckpointRecord, Run, RunStatus
from trainforge.errors import CheckpointError, Conflict, NotFound
from trainforge.storage import RunCheckpointStore, all_items
from trainforge.train.checkpoint import CheckpointInfo, CheckpointManager


def open_run_checkpoints(store: RunCheckpointStore, run_id: str) -> CheckpointManager:
    """The manager of run `run_id`'s checkpoints, recording in `store` what it saves or deletes.

    Its location and policy are the run's recorded `checkpoint` system entry. `NotFound` for
    an unknown run; `CheckpointError` naming the run when it has no checkpoint location (not a
    pipeline run). Close it after use (it is a context manager).
    """
    return _manager(store, store.get_run(run_id))


def checkpoint_policy(run: Run) -> CheckpointSpec:
    """The checkpoint policy `run` ran with; `CheckpointError` when it recorded none."""
    try:
        return CheckpointSpec.model_validate(run.system["checkpoint"]["policy"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise CheckpointError(
            f"run {run.run_id}: it recorded no valid checkpoint policy ({exc})"
        ) from exc


def list_run_checkpoints(
    store: RunCheckpointStore, run_id: str, include_deleted: bool = False
) -> list[CheckpointRecord]:
    """The records of run `run_id`'s checkpoints by step, reconciled with storage first.

    Deleted ones (files gone) only with `include_deleted`. Errors as `open_run_checkpoints`.
    """
    with open_run_checkpoints(store, run_id) as manager:
        _reconcile(store, run_id, manager.list())
    return _records(store, run_id, include_deleted)


def gc_run_checkpoints(
    store: RunCheckpointStore,
    run_id: str,
    keep_last: int | None = None,
    keep_best: int | None = None,
    *,
    force: bool = False,
) -> list[CheckpointInfo]:
    """Apply retention to run `run_id`'s checkpoints now; return what was deleted, by step.

    Keeps the `keep_last` newest and the `keep_best` best by the run's `monitor` (None: the
    run's policy). Records are reconciled first, and each deletion is recorded once storage
    confirmed it; a failure raises `CheckpointError` (e.g. `keep_best` without a monitor) and
    the call can be repeated. `Conflict` for a `running` run unless `force`.
    """
    run = store.get_run(run_id)
    if run.status is RunStatus.RUNNING and not force:
        raise Conflict(
            f"run {run_id} is running: its trainer prunes its own checkpoints and a location "
            "takes one writer; force it only if the run's process is gone"
        )
    with _manager(store, run) as manager:
        _reconcile(store, run_id, manager.list())
        return sorted(manager.gc(keep_last, keep_best), key=lambda info: info.step)


def _records(
    store: RunCheckpointStore, run_id: str, include_deleted: bool
) -> list[CheckpointRecord]:
    return all_items(lambda cursor: store.list_checkpoints(run_id, include_deleted,
                                                           cursor=cursor))


def _reconcile(
    store: RunCheckpointStore, run_id: str, valid: Sequence[CheckpointInfo]
) -> None:
    """Make the store's records of run `run_id` agree with the `valid` checkpoints in storage:
    record those without a live record, mark deleted the live records not among them."""
    records = {r.step: r for r in _records(store, run_id, include_deleted=True)}
    in_storage = {info.step for info in valid}
    for info in valid:
        if info.step not in records or records[info.step].deleted:
            _record(store, run_id, info)
    for record in records.values():
        if not record.deleted and record.step not in in_storage:
            store.mark_checkpoint_deleted(run_id, record.step)


def _manager(store: RunCheckpointStore, run: Run) -> CheckpointManager:
    location = (run.system.get("checkpoint") or {}).get("location")
    if not location:
        raise CheckpointError(
            f"run {run.run_id} has no checkpoint location: only pipeline runs save checkpoints"
        )
    policy = checkpoint_policy(run)

    def deleted(info: CheckpointInfo) -> None:
        # A folder that never held a committed checkpoint (an interrupted save) has no record.
        with contextlib.suppress(NotFound):
            store.mark_checkpoint_deleted(run.run_id, info.step)

    return CheckpointManager(
        location, policy, run.run_id, storage_options=policy.fsspec_options(),
        on_saved=lambda info: _record(store, run.run_id, info), on_deleted=deleted,
    )


def _record(store: RunCheckpointStore, run_id: str, info: CheckpointInfo) -> None:
    store.record_checkpoint(run_id, info.step, info.uri, info.epoch, info.metric_values)
