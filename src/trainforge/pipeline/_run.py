"""`run_pipeline`: plan a spec, open (or resume, or join) its tracked run, execute the training
DAG, and translate what went wrong into errors that name the run.

    plan_pipeline      spec file or object + overrides → checked spec, spec hash (no run yet)
    _run_to_resume     --resume RUN_ID (the same spec), or `resume: auto` matching the spec hash
    _open_run          a new run, the resumed one, or the one a multi-node job shares
    tracked_run        the run open for a block that executes the DAG as one pipeline run
                       through `drive` (every step's state in `step_runs`), its steps where
                       the executors put them (`launch_pipeline`: train on torchrun workers)
    _errors_of_run     `Preempted` → `RunPreempted`, `Pruned` → `RunPruned`, other trainforge
                       errors → `RunFailed`
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainforge.config import PipelineSpec
from trainforge.entities import ModelVersion, Pipeline, Run, RunStatus
from trainforge.errors import (
    Conflict,
    NotFound,
    PipelineFailed,
    Preempted,
    Pruned,
    ResumeRefused,
    RunFailed,
    RunPreempted,
    RunPruned,
    SpecError,
    TrainforgeError,
)
from trainforge.evaluate import EvalReport
from trainforge.orchestration import Dag, Step, StepListener, drive
from trainforge.orchestration.executors import ExecutorChoice
from trainforge.orchestration.steps import StepDefinition, as_step
from trainforge.pipeline._alerts import DataAlerts
from trainforge.pipeline._plan import SPEC_OBJECT, PipelinePlan, plan_pipeline
from trainforge.pipeline._resume import (
    SpecChange,
    check_resumable,
    check_same_spec,
    checkpoint_location,
    checkpoint_record,
    find_resumable,
    runs_for_job,
)
from trainforge.registry import GateResult
from trainforge.session import Session
from trainforge.tracking import (
    ResumeEntry,
    RunHandle,
    SystemRecord,
    open_run,
    process_record,
)
from trainforge.train import Callback
from trainforge.versioning import open_repository

log = logging.getLogger("trainforge")


@dataclass(frozen=True)
class PipelineResult:
    run: Run
    evaluation: EvalReport
    gate: GateResult
    model_version: ModelVersion | None


def run_pipeline(
    spec: PipelineSpec | str | Path,
    overrides: Sequence[str] | None = None,
    *,
    session: Session | None = None,
    listener: StepListener | None = None,
    callbacks: Sequence[Callback] = (),
    parent: RunHandle | str | None = None,
    resume: str | None = None,
    allow_neutral_changes: bool = False,
    pipeline_run: str | None = None,
    steps: Sequence[StepDefinition | Step | Callable[..., Any]] = (),
    reproduces: str | None = None,
) -> PipelineResult:
    """Run the pipeline `spec` declares (a spec file, or a `PipelineSpec`), as one tracked run.

    Spec errors raise `SpecError` before any run exists; a later `TrainforgeError` ends the run
    `failed` and is raised as `RunFailed` naming the run; Ctrl+C ends it `failed` too. SIGTERM
    (or a signal in `training.checkpoint.preempt_on`) ends it `preempted`, after a checkpoint
    when it arrives during training, raised as `RunPreempted`. `resume` continues that run
    from its newest checkpoint as it was recorded (`ResumeRefused` if it completed, still
    runs, or the spec given differs from the recorded one; `allow_neutral_changes` lets
    through changes that keep its spec hash, recorded on the run); without it,
    `training.checkpoint.resume: auto` continues the newest unfinished run of the same spec
    hash that has one. `callbacks` join the trainer's (e.g. a tuning trial reporting and
    pruning); `parent` nests the run under another. A callback raising `Pruned` (a tuning
    trial's pruner) ends the run `pruned`, raised as `RunPruned`. `pipeline_run` (with
    `resume`) continues that pipeline run of the run rather than starting another: its steps
    without stored outputs run again, the train step from the run's newest checkpoint.
    `steps` (`@step` functions, `Step`s or plain functions) join the chain beside the spec's
    own `steps:`, placed by their inputs and `after`. `reproduces` names the run this one
    reproduces (`trainforge reproduce`), recorded on the new run. (`launch_pipeline` runs the
    train step on torchrun workers.)
    """
    plan = plan_pipeline(spec, overrides, [as_step(item) for item in steps])
    _check_process_group(plan)
    with tracked_run(plan, session or Session.open(), callbacks=callbacks, parent=parent,
                     resume=resume, allow_neutral_changes=allow_neutral_changes,
                     reproduces=reproduces) as tracked:
        values = tracked.execute(listener=listener, pipeline_run=pipeline_run)
    return tracked.result(values)


@dataclass
class TrackedRun:
    """A pipeline's tracked run while it is open (`tracked_run`): its session (with the spec's
    credentials), the run's handle and the training DAG; `execute` runs the DAG as one of its
    pipeline runs."""

    plan: PipelinePlan
    session: Session
    handle: RunHandle
    dag: Dag
    left: bool = False

    def execute(self, *, listener: StepListener | None = None, pipeline_run: str | None = None,
                dag: Dag | None = None, executors: ExecutorChoice | None = None,
                ) -> dict[str, Any]:
        """`dag` (by default the plan's) as one pipeline run recording to the run, its steps
        where `executors` puts them; given `pipeline_run`, that pipeline run continued (its
        steps with stored outputs not run again). Its values (`evaluation`, `gate`,
        `model_version`). A failed step's own error is raised when it is trainforge's (a
        preemption, a data error: what `_errors_of_run` translates), else `PipelineFailed`
        naming the step and its error."""
        dag = dag or self.dag
        try:
            outcome = (drive(dag, self.session, self.handle, resume=pipeline_run,
                             listener=listener, executors=executors)
                       if pipeline_run is not None else
                       drive(dag, self.session, self.handle, source=self.plan.source_record(),
                             listener=listener, executors=executors))
        except PipelineFailed as exc:
            failure = exc.__cause__ if isinstance(exc.__cause__, TrainforgeError) else exc
        else:
            return {name: outcome.value(name) for name in ("evaluation", "gate",
                                                             "model_version")}
        raise failure

    def leave(self) -> None:
        """Leave the run to another process that reports and ends it (a multi-node job's
        leading launcher): the handle closes, and the run's block ends nothing."""
        self.handle.close()
        self.left = True

    def result(self, values: dict[str, Any]) -> PipelineResult:
        """What the ended run became, with the values its DAG returned."""
        return PipelineResult(
            run=self.session.store.get_run(self.handle.run_id),
            evaluation=values["evaluation"],
            gate=values["gate"],
            model_version=values["model_version"],
        )


@contextmanager
def tracked_run(
    plan: PipelinePlan,
    session: Session,
    *,
    callbacks: Sequence[Callback] = (),
    parent: RunHandle | str | None = None,
    resume: str | None = None,
    allow_neutral_changes: bool = False,
    run_id: str | None = None,
    job: str | None = None,
    reproduces: str | None = None,
) -> Iterator[TrackedRun]:
    """The plan's tracked run (new, resumed, or joined) for the block, ended with it:
    completed when the block returns, else as `_errors_of_run` says (and raised as its
    error naming the run), unless the block `leave`s it.

    `run_id` names a new run: the first process to start it creates it, the others join it
    while it runs (`Conflict` once it has ended). `job` is a multi-node job's key, the same in
    every launcher: a run to resume (`resume`, or `resume: auto`'s choice) is reopened by the
    first launcher and joined by the others (`RunStore.reopen_run`), and a new run records it.
    The run's session is `session` with the spec's credentials (its data source's and
    checkpoint location's storage options). A new run records the run it `reproduces`."""
    session = session.with_credentials(plan.spec.credentials())
    preemption = plan.preemption_notice()
    dag = plan.dag(session.store, callbacks, preemption,
                   open_repository(session.settings, session.store),
                   DataAlerts(session.events), credentials=session.credentials)
    session.store.upsert_pipeline(
        Pipeline(pipeline_id=plan.spec.name, name=plan.spec.name, dag_config=dag.describe())
    )
    resumed = _run_to_resume(plan, session, resume, allow_neutral_changes, job)
    started = time.perf_counter()
    handle = _open_run(plan, session, parent, resumed, run_id,
                       SystemRecord(job=job, reproduces=reproduces))
    tracked = TrackedRun(plan, session, handle, dag)
    with _errors_of_run(handle.run_id), handle, preemption.installed():
        if resumed is not None:
            handle.log_params(plan.spec.model_dump(mode="json"))  # the spec this attempt runs
            handle.set_system(plan.system_record().merged(process_record(session.user)).merged(
                SystemRecord(resume=ResumeEntry(
                    changes=[c.to_json() for c in resumed.changes]))))
        yield tracked
        if not tracked.left:
            handle.set_summary({"wall_time_s": time.perf_counter() - started})


def _check_process_group(plan: PipelinePlan) -> None:
    """`SpecError`, before any run exists, for a ddp/fsdp spec run in this process without the
    process group its entry point must join."""
    import torch.distributed as dist

    strategy = plan.spec.training.strategy
    if strategy != "single" and not dist.is_initialized():
        raise SpecError([
            f"{plan.source or SPEC_OBJECT}: training.strategy: {strategy!r} trains in a process "
            "group: run `trainforge run SPEC --nproc-per-node N`, or call run_pipeline inside "
            "`with trainforge.train.process_group():`"])


@dataclass(frozen=True)
class _Resumption:
    """The run to continue, and the (neutral) changes of the spec it continues with."""

    run_id: str
    changes: list[SpecChange]


def _run_to_resume(plan: PipelinePlan, session: Session, resume: str | None,
                   allow_neutral_changes: bool, job: str | None) -> _Resumption | None:
    """The run to continue (checked), or None for a new run. A run that another launcher of
    the same job (`job`) has reopened is this launcher's to join: not refused as running."""
    if resume is not None:
        try:
            run = session.store.get_run(resume)
        except NotFound as exc:
            raise ResumeRefused(f"{exc}: there is no such run to resume") from exc
        if job is None or not runs_for_job(run, job):
            check_resumable(run, plan.spec)
        changes = check_same_spec(run, plan.spec, allow_neutral=allow_neutral_changes)
        return _Resumption(resume, changes)
    if plan.spec.training.checkpoint.resume != "auto":
        return None
    experiment = session.store.get_or_create_experiment(plan.spec.experiment_name)
    found = find_resumable(session.store, experiment.experiment_id, plan.spec, plan.spec_hash,
                           job)
    if found is None:
        return None
    log.info("resume: auto continues run %s (%s)", found.run_id, found.status.value)
    return _Resumption(found.run_id, check_same_spec(found, plan.spec, allow_neutral=True))


def _open_run(plan: PipelinePlan, session: Session, parent: RunHandle | str | None,
              resumed: _Resumption | None, run_id: str | None,
              origin: SystemRecord) -> RunHandle:
    """The run this process records to: resumed, joined (`run_id` taken) or new (recording
    its `origin`: the multi-node job's key, the run it reproduces)."""
    spec = plan.spec
    tensorboard_dir = session.settings.tensorboard_dir if spec.tracking.tensorboard else None
    if resumed is not None:
        return open_run(spec.experiment_name, session, resume=resumed.run_id, job=origin.job,
                        tensorboard_dir=tensorboard_dir)
    new_id = run_id or uuid.uuid4().hex
    location = checkpoint_location(spec.training.checkpoint, new_id,
                                   session.artifacts.run_uri(new_id))
    system = (plan.system_record().merged(process_record(session.user))
              .merged(checkpoint_record(spec.training.checkpoint, location))
              .merged(origin))
    try:
        return open_run(spec.experiment_name, session, params=spec.model_dump(mode="json"),
                        parent=parent, run_id=new_id, pipeline_id=spec.name, system=system,
                        spec_hash=plan.spec_hash, code=plan.code(),
                        tensorboard_dir=tensorboard_dir)
    except Conflict:
        if run_id is None:
            raise
    return _join(session, run_id)


def _join(session: Session, run_id: str) -> RunHandle:
    """A handle on `run_id`, which another launcher of the same multi-node job created."""
    run = session.store.get_run(run_id)
    if run.status is not RunStatus.RUNNING:
        raise Conflict(f"run {run_id} has ended ({run.status.value}); a new multi-node job needs "
                       "a new --rdzv-id")
    return RunHandle.attach(session.store, run_id, session.artifacts,
                            settings=session.settings)


@contextmanager
def _errors_of_run(run_id: str) -> Iterator[None]:
    """Errors raised once the run exists, named by it (the run has ended by then)."""
    try:
        yield
    except Preempted as exc:
        raise RunPreempted(run_id, exc) from exc
    except Pruned as exc:
        raise RunPruned(run_id, exc) from exc
    except TrainforgeError as exc:
        raise RunFailed(run_id, exc) from exc
