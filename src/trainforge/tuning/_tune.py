"""`tune`: run a pipeline's study from its `tuning:` section, from start to report.

    1. plan the spec (+ overrides, --trials) and check its search space, before any run exists
    2. open the study's run and create the study (budget enqueued, context recorded)
    3. run the trials: in this process, or in `workers` local worker processes (more may join
       from any machine with `trainforge tune-worker STUDY`)
    4. record the best trial, importances and plots on the study's run
    5. `refit`: the pipeline once more with the best values, evaluated, gated and registered
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import optuna

from trainforge.config import PipelineSpec, Settings
from trainforge.errors import Conflict, NotFound, SpecError
from trainforge.pipeline import PipelineResult, plan_pipeline, run_pipeline
from trainforge.session import Session
from trainforge.tracking import SystemRecord, TuningEntry, open_run
from trainforge.tuning._objective import PipelineObjective
from trainforge.tuning._results import StudySummary, record_on_run, save_plots, summarize
from trainforge.tuning._space import check_space, trial_overrides
from trainforge.tuning._study import (
    StudyContext,
    check_some_completed,
    create_study,
    load_study,
    open_storage,
)
from trainforge.tuning._worker import Objective, start_local_workers, wait_for, work

SPEC_OBJECT = "<PipelineSpec object>"
log = logging.getLogger("trainforge")


@dataclass(frozen=True)
class TuneResult:
    """A finished study: its summary, the plots saved on its run, the refit's result (None
    without `tuning.refit`, or with no complete trial) and the exit codes of the local worker
    processes (none when the trials ran in this process)."""

    summary: StudySummary
    plots: list[str]
    refit: PipelineResult | None
    worker_exit_codes: list[int]


def study_name_of(spec: PipelineSpec) -> str:
    """A study's default name: the pipeline's name + `-tune`."""
    return f"{spec.name}-tune"


def tune(
    spec: PipelineSpec | str | Path,
    overrides: Sequence[str] = (),
    *,
    trials: int | None = None,
    workers: int = 1,
    study: str | None = None,
    session: Session | None = None,
    objective: Callable[[StudyContext, Session, str], Objective] | None = None,
) -> TuneResult:
    """Run the study the spec's `tuning:` section declares, as the module docstring says.

    `trials` replaces `tuning.trials`; `study` names the study (default: pipeline name +
    `-tune`; `Conflict` if it exists). `SpecError` before any run exists for a spec without a
    `tuning:` section, a bad search space or PBT (`tuning.pbt`: `run_pbt` runs those).
    `objective(context, session, study)` builds the trial objective (default: one pipeline
    run per trial; benchmarks pass a trivial one). With `workers` > 1 trials run in that many
    local processes, and always as pipeline runs.
    """
    plan = plan_pipeline(spec, [*overrides, *([f"tuning.trials={trials}"] if trials else [])])
    source = str(plan.source) if plan.source is not None else SPEC_OBJECT
    tuning = plan.spec.tuning
    if tuning is None:
        raise SpecError([f"{source}: tuning: the spec has no tuning section to run a study of"])
    if tuning.pbt is not None:
        raise SpecError([f"{source}: tuning.pbt: a population-based study runs with run_pbt "
                         "(`trainforge tune` hands it there); remove tuning.pbt to run a search"])
    check_space(plan.spec, source)
    session = session or Session.open()
    storage = open_storage(session.settings.database_url.get_secret_value())
    name = study or study_name_of(plan.spec)
    _check_new(storage, name)
    deadline = (time.time() + tuning.timeout_minutes * 60) if tuning.timeout_minutes else None
    with open_run(plan.spec.experiment_name, session,
                  params={"tuning": tuning.model_dump(mode="json")}, code=plan.code(),
                  system=plan.system_record().merged(
                      SystemRecord(tuning=TuningEntry(study=name)))) as run:
        context = StudyContext(plan.spec, source if plan.source else None, plan.overrides,
                               run.run_id, deadline)
        optuna_study = create_study(storage, name, context, source)
        if workers > 1:
            codes = _run_in_workers(name, workers, session.settings)
        else:
            codes = []
            build = objective or PipelineObjective
            work(optuna_study, storage, build(context, session, name),
                 bounded=tuning.trials is not None, deadline=deadline)
        check_some_completed(optuna_study)
        summary = summarize(optuna_study, context, importances=True)
        record_on_run(run, summary)
        plots = save_plots(run, optuna_study)
        refit = _refit(context, session, summary) if tuning.refit else None
    return TuneResult(summary, plots, refit, codes)


def _run_in_workers(name: str, workers: int, settings: Settings) -> list[int]:
    """Run the study's trials in `workers` local processes; their exit codes."""
    codes = wait_for(start_local_workers(name, workers, settings))
    if any(codes):  # a dead worker's trial was retried by the others
        log.warning("study %s: worker exit codes %s", name, codes)
    return codes


def _check_new(storage: optuna.storages.BaseStorage, name: str) -> None:
    """`Conflict` if the study `name` exists already."""
    try:
        load_study(storage, name)
    except NotFound:
        return
    raise Conflict(f"study {name!r} exists already: join it with `trainforge tune-worker "
                   f"{name}`, or name a new one with --study")


def _refit(context: StudyContext, session: Session,
           summary: StudySummary) -> PipelineResult | None:
    """The pipeline with the best trial's values, evaluated, gated and registered as usual,
    nested under the study's run."""
    if summary.best is None:
        return None
    return run_pipeline(context.spec, trial_overrides(summary.best.params), session=session,
                        parent=context.study_run_id)
