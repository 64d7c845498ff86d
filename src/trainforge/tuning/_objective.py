"""A trial: the pipeline with the trial's values applied, run as one tracked run under the
study's run, reporting the objective to Optuna as it trains.

    PruningReporter   the trainer callback: reports each epoch (and every N steps), and raises
                      `Pruned` at that step boundary when the pruner says so
    PipelineObjective Optuna's objective: sample, run the pipeline, return the objective value
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import optuna

from trainforge.errors import Pruned, RunPruned, TrainingError
from trainforge.pipeline import run_pipeline
from trainforge.session import Session
from trainforge.tracking import SystemRecord, TuningEntry, active_run
from trainforge.train import Callback
from trainforge.tuning._space import sample, trial_overrides
from trainforge.tuning._study import RUN_ID_ATTR

if TYPE_CHECKING:
    from trainforge.train import Trainer
    from trainforge.tuning._study import StudyContext

# Trials train without registering: `refit` registers the best values once.
TRIAL_OVERRIDES = ("registry=null",)


class PruningReporter(Callback):
    """Reports the trial's objective `metric` to Optuna after each epoch's validation, and
    every `every_n_steps` optimizer steps where the trainer logged it at that step (a training
    metric); reports are numbered 1, 2, ... (the pruners' resource). When the pruner judges the
    trial unpromising it raises `Pruned` at that step boundary, so the run ends `pruned`.

    At the start of training it records the trial on its run: the trial number and values as
    params (`trial`), the study and trial in the run's system namespace, and the run's id as
    the trial's user attr `run_id`."""

    def __init__(self, trial: optuna.Trial, metric: str, values: dict[str, Any], study: str,
                 every_n_steps: int | None = None) -> None:
        self.trial = trial
        self.metric = metric
        self.values = values
        self.study = study
        self.every_n_steps = every_n_steps
        self.reports = 0
        self._reported_step = -1  # one report per step, though logged there twice

    def on_fit_start(self, trainer: Trainer) -> None:
        run = active_run()
        if run is None:
            return
        run.log_params({"trial": {"number": self.trial.number, "params": self.values}})
        run.set_system(SystemRecord(tuning=TuningEntry(study=self.study,
                                                       trial=self.trial.number)))
        self.trial.set_user_attr(RUN_ID_ATTR, run.run_id)

    def on_step_end(self, trainer: Trainer) -> None:
        step = trainer.state.global_step
        if self.every_n_steps is not None and step % self.every_n_steps == 0:
            self._report(trainer.step_metrics.get(self.metric), step)

    def on_epoch_end(self, trainer: Trainer) -> None:
        self._report(trainer.step_metrics.get(self.metric), trainer.state.global_step)

    def _report(self, value: float | None, step: int) -> None:
        if value is None or not math.isfinite(value) or step == self._reported_step:
            return
        self._reported_step = step
        self.reports += 1
        self.trial.report(value, self.reports)
        if self.trial.should_prune():
            raise Pruned(step, value)


@dataclass
class PipelineObjective:
    """Optuna's objective for the study of `context`: one `run_pipeline` per trial, nested under
    the study's run, in the `session` given. The value is the run's objective metric (its
    summary or last logged value); `TrainingError` if the run never recorded it."""

    context: StudyContext
    session: Session
    study: str

    def __call__(self, trial: optuna.Trial) -> float:
        tuning = self.context.tuning
        values = sample(trial, tuning.space)
        reporter = PruningReporter(trial, tuning.objective.metric, values, self.study,
                                   tuning.report_every_n_steps)
        try:
            result = run_pipeline(
                self.context.spec, [*TRIAL_OVERRIDES, *trial_overrides(values)],
                session=self.session, callbacks=[reporter],
                parent=self.context.study_run_id)
        except RunPruned as exc:
            raise optuna.TrialPruned(str(exc)) from exc
        value = result.run.metrics.get(tuning.objective.metric)
        if value is None:
            raise TrainingError(f"trial {trial.number}: run {result.run.run_id} recorded no "
                                f"{tuning.objective.metric!r} (tuning.objective.metric)")
        return value
