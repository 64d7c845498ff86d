"""Which run a pipeline continues, and where a run's checkpoints live.

- `trainforge run SPEC --resume RUN_ID` continues that run: it must belong to the pipeline,
  not be `completed`, and not be running still (its process alive on this host, or its
  heartbeat fresh when it ran elsewhere);
- `training.checkpoint.resume: auto` continues the newest such run of the same pipeline and
  the same spec (same params) that has a valid checkpoint, else starts a new run.

A run's checkpoints are `<training.checkpoint.location>/<run_id>` when a location is set, else
the `checkpoints/` folder of the run's artifacts.
"""

from __future__ import annotations

import os
import socket
import warnings
from datetime import datetime, timezone
from typing import Any

from trainforge.config import CheckpointSpec, PipelineSpec
from trainforge.entities import Run, RunStatus
from trainforge.errors import Conflict
from trainforge.storage import RunStore
from trainforge.storage.artifacts import ArtifactStore
from trainforge.train.checkpoint import CheckpointManager, CheckpointWarning

STALE_HEARTBEAT_S = 60.0  # six missed heartbeats: a run on another host is taken as dead
CANDIDATES = 100  # newest runs of the pipeline looked at by `resume: auto`


def checkpoint_location(spec: CheckpointSpec, run_id: str, artifacts: ArtifactStore) -> str:
    """Where the checkpoints of run `run_id` are saved."""
    if spec.location:
        return f"{spec.location.rstrip('/')}/{run_id}"
    return f"{artifacts.run_uri(run_id)}/checkpoints"


def process_tag() -> dict[str, Any]:
    """The `process` tag of a run: where it runs, so a resume can tell whether it still does."""
    return {"process": {"host": socket.gethostname(), "pid": os.getpid()}}


def check_resumable(run: Run, spec: PipelineSpec) -> None:
    """`Conflict` unless `run` is an unfinished run of this pipeline that no process holds."""
    if run.pipeline_id != spec.name:
        raise Conflict(f"run {run.run_id} belongs to pipeline {run.pipeline_id!r}, not "
                       f"{spec.name!r}")
    if run.status is RunStatus.COMPLETED:
        raise Conflict(f"run {run.run_id} has completed; there is nothing to resume")
    if is_alive(run):
        process = run.tags.get("process", {})
        raise Conflict(f"run {run.run_id} is still running (pid {process.get('pid')} on "
                       f"{process.get('host')}); stop it first")


def is_alive(run: Run, now: datetime | None = None) -> bool:
    """Whether a process may still be running `run`: its process on this host exists, or,
    run elsewhere, its heartbeat is younger than `STALE_HEARTBEAT_S`."""
    if run.status is not RunStatus.RUNNING:
        return False
    process = run.tags.get("process") or {}
    if process.get("host") == socket.gethostname() and isinstance(process.get("pid"), int):
        return _pid_exists(process["pid"])
    beat = run.heartbeat_at or run.started_at
    now = now or datetime.now(timezone.utc)
    return (now - beat).total_seconds() < STALE_HEARTBEAT_S


def find_resumable(store: RunStore, experiment_id: str, spec: PipelineSpec,
                   artifacts: ArtifactStore) -> Run | None:
    """The newest unfinished run of `spec` (same pipeline, same params) with a checkpoint."""
    params = spec.model_dump(mode="json")
    newest = store.list_runs(experiment_id, pipeline_id=spec.name, limit=CANDIDATES)
    for run in newest.items:
        if run.params != params or run.status is RunStatus.COMPLETED or is_alive(run):
            continue
        if has_checkpoint(spec.training.checkpoint, run.run_id, artifacts):
            return run
    return None


def has_checkpoint(spec: CheckpointSpec, run_id: str, artifacts: ArtifactStore) -> bool:
    """Whether run `run_id` has a checkpoint with a valid manifest."""
    location = checkpoint_location(spec, run_id, artifacts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CheckpointWarning)
        with CheckpointManager(location, spec, run_id,
                               storage_options=dict(spec.storage_options)) as manager:
            return manager.latest() is not None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
