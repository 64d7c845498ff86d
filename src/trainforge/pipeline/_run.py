"""`run_pipeline`: load a spec, open a tracked run, execute the training DAG, report."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from trainforge.config import PipelineSpec, Settings, load_spec
from trainforge.entities import ModelVersion, Pipeline, Run, RunStatus
from trainforge.errors import Conflict, Preempted, RunFailed, RunPreempted, TrainforgeError
from trainforge.evaluate import EvalReport
from trainforge.orchestration import StepListener, run_dag
from trainforge.pipeline._checks import check_spec
from trainforge.pipeline._dag import build_training_dag
from trainforge.pipeline._resume import check_resumable, find_resumable, process_tag
from trainforge.registry import GateResult
from trainforge.storage import Store, open_store, trainforge_home
from trainforge.storage.artifacts import ArtifactStore, open_artifact_store
from trainforge.tracking import RunHandle, start_run

log = logging.getLogger("trainforge")
Execute = Callable[[RunHandle], dict[str, Any]]


@dataclass(frozen=True)
class PipelineResult:
    run: Run
    evaluation: EvalReport
    gate: GateResult
    model_version: ModelVersion | None


def load_checked_spec(path: str | Path, overrides: list[str] | None = None) -> PipelineSpec:
    """Load a spec and run the cross-section checks: what `trainforge validate` does."""
    spec = load_spec(path, overrides)
    check_spec(spec, path)
    return spec


def default_artifact_store() -> ArtifactStore:
    return open_artifact_store(trainforge_home() / "artifacts")


def _run_to_resume(store: Store, spec: PipelineSpec, artifacts: ArtifactStore,
                   resume: str | None) -> str | None:
    """The id of the run to continue (checked), or None for a new run."""
    if resume is not None:
        check_resumable(store.get_run(resume), spec)
        return resume
    if spec.training.checkpoint.resume != "auto":
        return None
    experiment = store.get_or_create_experiment(spec.experiment_name)
    found = find_resumable(store, experiment.experiment_id, spec, artifacts)
    if found is not None:
        log.info("resume: auto continues run %s (%s)", found.run_id, found.status.value)
    return found.run_id if found is not None else None


def run_pipeline(
    path: str | Path,
    overrides: list[str] | None = None,
    store: Store | None = None,
    artifacts: ArtifactStore | None = None,
    listener: StepListener | None = None,
    execute: Execute | None = None,
    resume: str | None = None,
) -> PipelineResult:
    """Run the pipeline a spec file declares, as one tracked run.

    Spec errors raise `SpecError` before any run exists; a later `TrainforgeError` ends the run
    `failed` and is raised as `RunFailed` naming the run; Ctrl+C ends it `failed` too. SIGTERM
    (or a signal in `training.checkpoint.preempt_on`) ends it `preempted`, after a checkpoint
    when it arrives during training, raised as `RunPreempted`. `resume` continues that run
    from its newest checkpoint (`Conflict` if it completed or still runs); without it,
    `training.checkpoint.resume: auto` continues the newest unfinished run of the same spec
    that has one. `execute(run)` runs the steps and returns their values (`evaluation`,
    `gate`, `model_version`); by default the DAG runs in this process (`launch_pipeline`
    passes one that starts torchrun workers instead).
    """
    result = run_tracked(path, overrides, store, artifacts, listener, execute, resume)
    assert result is not None  # an `Execute` returns the values
    return result


def run_tracked(
    path: str | Path,
    overrides: list[str] | None = None,
    store: Store | None = None,
    artifacts: ArtifactStore | None = None,
    listener: StepListener | None = None,
    execute: Callable[[RunHandle], dict[str, Any] | None] | None = None,
    resume: str | None = None,
    run_id: str | None = None,
) -> PipelineResult | None:
    """`run_pipeline`, with what the launchers of a multi-node job (one per node) add.

    `run_id` names the run: the first process to start it creates it, the others join it while
    it runs (`Conflict` once it has ended); no run is resumed. `execute` may return None: another
    process reports the run and ends it, so this one only closes its handle and returns None.
    """
    spec = load_checked_spec(path, overrides)
    store = store or open_store(Settings.from_env().database_url.get_secret_value())
    artifacts = artifacts or default_artifact_store()
    dag = build_training_dag(spec)
    pipeline = store.upsert_pipeline(
        Pipeline(pipeline_id=spec.name, name=spec.name, dag_config=dag.describe())
    )
    resume = _run_to_resume(store, spec, artifacts, resume) if run_id is None else None
    started = time.perf_counter()
    handle: RunHandle | None = None
    params = spec.model_dump(mode="json")
    start = partial(
        start_run, spec.experiment_name, params, store=store, artifacts=artifacts,
        pipeline_id=pipeline.pipeline_id, code_dir=Path(path).resolve().parent,
        tensorboard_dir=trainforge_home() / "tensorboard" if spec.tracking.tensorboard else None,
    )
    try:
        with (start(resume=resume) if run_id is None
              else _start_or_join(start, store, artifacts, run_id)) as handle:
            if resume is not None:
                handle.log_params(params)  # the spec this attempt runs
            handle.set_tags({"spec": {"path": str(path), "overrides": list(overrides or [])},
                             **process_tag()})
            values = execute(handle) if execute else run_dag(dag, {"run": handle}, listener)
            if values is None:
                handle.close()  # leaves the run to the process that reports it; `with` ends nothing
                return None
            handle.set_summary({"wall_time_s": time.perf_counter() - started})
    except Preempted as exc:
        if handle is None:
            raise
        raise RunPreempted(handle.run_id, exc) from exc
    except TrainforgeError as exc:
        if handle is None:
            raise
        raise RunFailed(handle.run_id, exc) from exc
    return PipelineResult(
        run=store.get_run(handle.run_id),
        evaluation=values["evaluation"],
        gate=values["gate"],
        model_version=values["model_version"],
    )


def _start_or_join(start: Callable[..., RunHandle], store: Store, artifacts: ArtifactStore,
                   run_id: str) -> RunHandle:
    """Run `run_id`, created by `start` or, when another process created it first, attached."""
    try:
        return start(run_id=run_id)
    except Conflict:
        run = store.get_run(run_id)
    if run.status is not RunStatus.RUNNING:
        raise Conflict(f"run {run_id} has ended ({run.status.value}); a new multi-node job needs "
                       "a new --rdzv-id")
    return RunHandle(store, run, artifacts)
