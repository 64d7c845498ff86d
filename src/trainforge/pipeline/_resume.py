"""Which run a pipeline continues, whether a run is still alive, and where its checkpoints live.

- `trainforge run SPEC --resume RUN_ID` continues that run: it must belong to the pipeline,
  not be `completed`, not be running still (its process alive on this host, or its heartbeat
  fresh when it ran elsewhere), and the spec given now must be the one it recorded: a resume
  continues the recorded run, it never turns into another. Changes that cannot alter what is
  trained (the same `spec_hash`: progress, logging cadence, resume mode, ...) are allowed on
  request and recorded on the run; any other change is refused, listing each one;
- `training.checkpoint.resume: auto` continues the newest such run of the same pipeline with
  the same `spec_hash` (what it trains, see `_plan`) that has a valid checkpoint, else starts a
  new run; its changes are neutral by that match, and recorded too;
- a multi-node job (`--nnodes` > 1) runs a launcher per node, each given the same resume
  (`--resume RUN_ID` or `auto`) and the same rendezvous, whose endpoint and id are the job's
  key: the first launcher reopens the run and records the key (`system.job`), the others find
  the run running for that key and join it instead of refusing it as live.

What this reads back lives in the run's `system` namespace, written when the run is opened:
`process` (host, pid) and `checkpoint` (location, policy). A run's checkpoints are
`<training.checkpoint.location>/<run_id>` when a location is set, else the `checkpoints/`
folder of the run's artifacts.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainforge.config import CheckpointSpec, PipelineSpec, flatten_paths
from trainforge.entities import Run, RunStatus
from trainforge.errors import ResumeRefused
from trainforge.pipeline._identity import spec_hash
from trainforge.storage import RunStore
from trainforge.tracking import (
    CheckpointEntry,
    SystemRecord,
    is_alive,
    recorded_spec_of,
    system_of,
    where_running,
)
from trainforge.train.checkpoint import CheckpointManager, CheckpointWarning

CANDIDATES = 100  # newest runs of the same spec looked at by `resume: auto`


def checkpoint_location(spec: CheckpointSpec, run_id: str, run_artifact_uri: str) -> str:
    """Where the checkpoints of run `run_id` are saved."""
    if spec.location:
        return f"{spec.location.rstrip('/')}/{run_id}"
    return f"{run_artifact_uri}/checkpoints"


def checkpoint_record(spec: CheckpointSpec, location: str) -> SystemRecord:
    """The `checkpoint` entry of a run's system namespace (the policy without credentials)."""
    return SystemRecord(checkpoint=CheckpointEntry(location=location,
                                                   policy=spec.model_dump(mode="json")))


@dataclass(frozen=True)
class SpecChange:
    """One field whose value differs between the recorded spec and the one given now."""

    path: str
    recorded: Any
    given: Any

    def describe(self) -> str:
        return f"{self.path}: recorded {self.recorded!r}, given {self.given!r}"

    def to_json(self) -> list[Any]:
        return [self.path, self.recorded, self.given]


def spec_changes(recorded: Mapping[str, Any], given: Mapping[str, Any]) -> list[SpecChange]:
    """Every leaf field (dotted path) whose value differs, by path; absent is None."""
    old, new = flatten_paths(recorded), flatten_paths(given)
    return [SpecChange(path, old.get(path), new.get(path)) for path in sorted(old | new)
            if old.get(path) != new.get(path)]


def check_resumable(run: Run, spec: PipelineSpec) -> None:
    """`ResumeRefused` unless `run` is an unfinished run of this pipeline that no process
    holds."""
    if run.pipeline_id != spec.name:
        raise ResumeRefused(f"run {run.run_id} belongs to pipeline {run.pipeline_id!r}, not "
                            f"{spec.name!r}")
    if run.status is RunStatus.COMPLETED:
        raise ResumeRefused(f"run {run.run_id} has completed; there is nothing to resume")
    if is_alive(run):
        raise ResumeRefused(f"run {run.run_id} is still running ({where_running(run)}); stop "
                            "it first")


def check_same_spec(run: Run, given: PipelineSpec, *, allow_neutral: bool) -> list[SpecChange]:
    """The changes from `run`'s recorded spec (read with today's schema) to `given`, when a
    resume may make them: none, or (with `allow_neutral`) only changes that keep the spec
    hash. `ResumeRefused` listing them otherwise."""
    recorded = recorded_spec_of(run)
    changes = spec_changes(recorded.model_dump(mode="json") if recorded
                           else system_of(run).resolved_spec or {},
                           given.model_dump(mode="json"))
    neutral = recorded is not None and spec_hash(recorded) == spec_hash(given)
    if not changes or (neutral and allow_neutral):
        return changes
    listed = "\n".join(f"  {change.describe()}" for change in changes)
    remedy = ("none of these changes what is trained: pass --allow-neutral-changes to continue "
              "with them" if neutral else
              "resume with the spec and overrides the run was started with, or start a new run")
    raise ResumeRefused(f"run {run.run_id} was started with another spec; a resume continues "
                        f"that run as it was:\n{listed}\n{remedy}")


def runs_for_job(run: Run, job: str) -> bool:
    """Whether `run` is running for the multi-node job `job` (another of its launchers
    opened it)."""
    return run.status is RunStatus.RUNNING and system_of(run).job == job


def find_resumable(store: RunStore, experiment_id: str, spec: PipelineSpec,
                   spec_hash: str, job: str | None = None) -> Run | None:
    """The newest unfinished, abandoned run of this pipeline and spec hash with a checkpoint;
    with `job`, first any such run another launcher of that job has opened already."""
    candidates = store.list_runs(experiment_id, limit=CANDIDATES, pipeline_id=spec.name,
                                 spec_hash=spec_hash)
    if job is not None:
        for run in candidates.items:
            if runs_for_job(run, job):
                return run
    for run in candidates.items:
        if run.status is RunStatus.COMPLETED or is_alive(run):
            continue
        recorded = system_of(run).checkpoint
        if recorded is not None and has_checkpoint(spec.training.checkpoint,
                                                   recorded.location, run.run_id):
            return run
    return None


def has_checkpoint(spec: CheckpointSpec, location: str, run_id: str) -> bool:
    """Whether run `run_id` has a checkpoint with a valid manifest at `location`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CheckpointWarning)
        with CheckpointManager(location, spec, run_id,
                               storage_options=spec.fsspec_options()) as manager:
            return manager.latest() is not None
