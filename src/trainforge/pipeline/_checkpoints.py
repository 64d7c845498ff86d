"""The checkpoints of a tracked pipeline run, after the fact: listed and pruned on demand
(`trainforge checkpoints list / gc`).

A pipeline run records where its checkpoints live and the policy that saves them in the
`checkpoint` entry of its system namespace. Credentials are never recorded: storage reached
from here authenticates through the environment or fsspec's configuration, or through the
storage options of the spec that names the location (`spec_storage_options`), given again.
Storage is the truth and the store's records follow it: listing reconciles both ways (a valid
checkpoint without a record is recorded, a record whose checkpoint is no longer valid in storage
is marked deleted), and pruning marks a record deleted only once storage confirmed the
deletion.

One writer per location: a run still `running` prunes its own checkpoints, so pruning it from
here is refused unless forced (its process is known to be gone).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from trainforge.config import CheckpointSpec, PipelineSpec
from trainforge.entities import CheckpointRecord, Run, RunStatus
from trainforge.errors import CheckpointError, Conflict, NotFound, TrainforgeError
from trainforge.pipeline._resume import checkpoint_location
from trainforge.storage import RunCheckpointStore, all_items
from trainforge.tracking import system_of
from trainforge.train.checkpoint import CheckpointInfo, CheckpointManager


def open_run_checkpoints(
    store: RunCheckpointStore, run_id: str, storage_options: Mapping[str, Any] | None = None
) -> CheckpointManager:
    """The manager of run `run_id`'s checkpoints, recording in `store` what it saves or deletes.

    Its location and policy are the run's recorded `checkpoint` system entry; `storage_options`
    (say, `spec_storage_options`) open the location instead of the recorded policy's, which
    hold no credentials. `NotFound` for an unknown run; `CheckpointError` naming the run when
    it has no checkpoint location (not a pipeline run). Close it after use (it is a context
    manager).
    """
    return _manager(store, store.get_run(run_id), storage_options)


def spec_storage_options(spec: PipelineSpec, run: Run) -> dict[str, Any]:
    """The storage options, credentials included, that `spec` gives for `run`'s checkpoint
    location: its `training.checkpoint.storage_options`, when its `training.checkpoint.location`
    is the one the run saved under. `CheckpointError` naming both locations otherwise."""
    recorded = _location(run)
    given = spec.training.checkpoint
    named = (checkpoint_location(given, run.run_id, run.artifact_uri) if given.location
             else None)
    if named != recorded:
        raise CheckpointError(
            f"run {run.run_id} saved its checkpoints under {recorded!r}; the spec's "
            f"training.checkpoint.location names {given.location!r}, so its storage options "
            "are not for that location")
    return given.fsspec_options()


def checkpoint_policy(run: Run) -> CheckpointSpec:
    """The checkpoint policy `run` ran with; `CheckpointError` when it recorded none."""
    try:
        recorded = system_of(run).checkpoint
        policy = CheckpointSpec.model_validate(recorded.policy) if recorded else None
    except ValidationError as exc:
        raise CheckpointError(
            f"run {run.run_id}: it recorded no valid checkpoint policy ({exc})"
        ) from exc
    if policy is None:
        raise CheckpointError(f"run {run.run_id}: it recorded no checkpoint policy")
    return policy


def list_run_checkpoints(
    store: RunCheckpointStore, run_id: str, include_deleted: bool = False, *,
    storage_options: Mapping[str, Any] | None = None,
) -> list[CheckpointRecord]:
    """The records of run `run_id`'s checkpoints by step, reconciled with storage first.

    Deleted ones (files gone) only with `include_deleted`. `storage_options` and errors as
    `open_run_checkpoints`.
    """
    run = store.get_run(run_id)
    with _manager(store, run, storage_options) as manager, _storage_errors(run):
        _reconcile(store, run_id, manager.list())
    return _records(store, run_id, include_deleted)


def gc_run_checkpoints(
    store: RunCheckpointStore,
    run_id: str,
    keep_last: int | None = None,
    keep_best: int | None = None,
    *,
    force: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> list[CheckpointInfo]:
    """Apply retention to run `run_id`'s checkpoints now; return what was deleted, by step.

    Keeps the `keep_last` newest and the `keep_best` best by the run's `monitor` (None: the
    run's policy). Records are reconciled first, and each deletion is recorded once storage
    confirmed it; a failure raises `CheckpointError` (e.g. `keep_best` without a monitor) and
    the call can be repeated. `Conflict` for a `running` run unless `force`.
    `storage_options` as `open_run_checkpoints`.
    """
    run = store.get_run(run_id)
    if run.status is RunStatus.RUNNING and not force:
        raise Conflict(
            f"run {run_id} is running: its trainer prunes its own checkpoints and a location "
            "takes one writer; force it only if the run's process is gone"
        )
    with _manager(store, run, storage_options) as manager, _storage_errors(run):
        _reconcile(store, run_id, manager.list())
        return sorted(manager.gc(keep_last, keep_best), key=lambda info: info.step)


@contextlib.contextmanager
def _storage_errors(run: Run) -> Iterator[None]:
    """The file system's own errors (OSError, botocore's, ...) as `CheckpointError` naming the
    run's checkpoint location; trainforge's errors pass as they are."""
    try:
        yield
    except TrainforgeError:
        raise
    except Exception as exc:  # any backend's failure: fsspec implementations raise their own
        raise CheckpointError(
            f"run {run.run_id}: cannot read its checkpoints at {_location(run)}: "
            f"{type(exc).__name__}: {exc} (credentials that only the run's spec holds are "
            "given with --spec SPEC, or for the location in the TRAINFORGE_CREDENTIALS "
            "file)") from exc


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


def _location(run: Run) -> str:
    """Where `run` saved its checkpoints; `CheckpointError` when it recorded no location."""
    recorded = system_of(run).checkpoint
    location = recorded.location if recorded is not None else None
    if not location:
        raise CheckpointError(
            f"run {run.run_id} has no checkpoint location: only pipeline runs save checkpoints"
        )
    return str(location)


def _manager(store: RunCheckpointStore, run: Run,
             storage_options: Mapping[str, Any] | None) -> CheckpointManager:
    location = _location(run)
    policy = checkpoint_policy(run)

    def deleted(info: CheckpointInfo) -> None:
        # A folder that never held a committed checkpoint (an interrupted save) has no record.
        with contextlib.suppress(NotFound):
            store.mark_checkpoint_deleted(run.run_id, info.step)

    return CheckpointManager(
        location, policy, run.run_id,
        storage_options=(dict(storage_options) if storage_options is not None
                         else policy.fsspec_options()),
        on_saved=lambda info: _record(store, run.run_id, info), on_deleted=deleted,
    )


def _record(store: RunCheckpointStore, run_id: str, info: CheckpointInfo) -> None:
    store.record_checkpoint(run_id, info.step, info.uri, info.epoch, info.metric_values)
