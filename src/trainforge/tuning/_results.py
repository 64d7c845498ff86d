"""What a study found, read from Optuna: the trials, the best one, the count per state, the
parameter importances (Optuna's default evaluator), the studies of a database; and the plots
saved as PNG artifacts of the study's run (Optuna's matplotlib plots, Agg backend).
"""

from __future__ import annotations

import io
import logging
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from trainforge.storage import RunStore
from trainforge.tracking import RunHandle
from trainforge.tuning._space import decoded
from trainforge.tuning._study import ERROR_ATTR, RUN_ID_ATTR, StudyContext, load_study

log = logging.getLogger("trainforge")
MIN_TRIALS_FOR_IMPORTANCES = 2


@dataclass(frozen=True)
class TrialRow:
    """One trial as `tune show` lists it; `params` are spec values, `run_id` its tracked run."""

    number: int
    state: str
    value: float | None
    params: dict[str, Any]
    run_id: str | None
    duration_s: float | None
    error: str | None = None


@dataclass(frozen=True)
class StudySummary:
    """A study: its objective, trials, the best complete trial and the trials per state."""

    name: str
    metric: str
    direction: str
    study_run_id: str
    trials: list[TrialRow]
    best: TrialRow | None
    states: dict[str, int]
    importances: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        def row(trial: TrialRow | None) -> dict[str, Any] | None:
            return None if trial is None else dict(vars(trial))

        return {"name": self.name, "metric": self.metric, "direction": self.direction,
                "study_run_id": self.study_run_id, "states": self.states,
                "best": row(self.best), "importances": self.importances,
                "trials": [row(t) for t in self.trials]}


def summarize(study: optuna.Study, context: StudyContext, *,
              importances: bool = False) -> StudySummary:
    """The summary of `study`; with `importances`, Optuna's parameter importances too (empty
    with fewer than two complete trials)."""
    space = context.tuning.space
    trials = [_row(trial, space) for trial in study.get_trials(deepcopy=False)]
    complete = [t for t in trials if t.state == TrialState.COMPLETE.name.lower()]
    best = None
    if complete:
        pick = max if context.tuning.objective.direction == "maximize" else min
        best = pick(complete, key=lambda t: (t.value, -t.number))
    states = dict(Counter(t.state for t in trials))
    found = _importances(study) if importances and len(complete) >= MIN_TRIALS_FOR_IMPORTANCES \
        else {}
    return StudySummary(study.study_name, context.tuning.objective.metric,
                        context.tuning.objective.direction, context.study_run_id, trials, best,
                        states, found)


def read_study(storage: optuna.storages.BaseStorage, name: str,
               runs: RunStore | None = None) -> StudySummary:
    """The summary of the study `name` (`NotFound` if there is none), importances included.

    With `runs`, the importances the study's run recorded when its study ended are reused
    while the study's trials per state are still those of then (a complete trial stays
    complete, so the same counts mean the same complete trials): Optuna's evaluator fits a
    random forest with scikit-learn, whose import alone takes a second or two."""
    study, context = load_study(storage, name)
    summary = summarize(study, context)
    recorded = _recorded_importances(runs, summary) if runs is not None else None
    if recorded is not None:
        return replace(summary, importances=recorded)
    complete = summary.states.get(TrialState.COMPLETE.name.lower(), 0)
    if complete < MIN_TRIALS_FOR_IMPORTANCES:
        return summary
    return replace(summary, importances=_importances(study))


def list_studies(storage: optuna.storages.BaseStorage) -> list[dict[str, Any]]:
    """Every study in the storage: name, direction, trials, best value, started."""
    return [{"name": s.study_name, "direction": s.direction.name.lower(),
             "trials": s.n_trials, "best_value": None if s.best_trial is None
             else s.best_trial.value, "started": s.datetime_start}
            for s in optuna.get_all_study_summaries(storage, include_best_trial=True)]


def record_on_run(run: RunHandle, summary: StudySummary) -> None:
    """The study's findings on its run: the best value as summary metric `best_<metric>`, the
    best trial, its values and run, the importances and state counts as tag `tuning`."""
    best = summary.best
    if best is not None and best.value is not None:
        run.set_summary({f"best_{summary.metric}": best.value})
    run.set_tags({"tuning": {
        "study": summary.name, "states": summary.states, "importances": summary.importances,
        "best": None if best is None else {"trial": best.number, "value": best.value,
                                           "params": best.params, "run_id": best.run_id}}})


def save_plots(run: RunHandle, study: optuna.Study) -> list[str]:
    """Optuna's plots of `study` as PNG artifacts `tuning/<name>.png` of the study's run:
    optimisation history, parallel coordinates, importances, intermediate values. A plot the
    trials cannot draw yet (too few of them) is skipped; returns the names saved."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as plots

    drawers: dict[str, Callable[[optuna.Study], Any]] = {
        "optimization_history": plots.plot_optimization_history,
        "parallel_coordinate": plots.plot_parallel_coordinate,
        "param_importances": plots.plot_param_importances,
        "intermediate_values": plots.plot_intermediate_values,
    }
    saved = []
    for name, draw in drawers.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # experimental API; few trials draw flat axes
                axes = draw(study)
        except (ValueError, RuntimeError, ZeroDivisionError) as exc:
            log.info("study %s: plot %s skipped: %s", study.study_name, name, exc)
            continue
        figure = axes.figure if hasattr(axes, "figure") else axes.flat[0].figure
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
        plt.close(figure)
        run.put_artifact(f"tuning/{name}.png", buffer.getvalue())
        saved.append(name)
    return saved


def _recorded_importances(runs: RunStore, summary: StudySummary) -> dict[str, float] | None:
    recorded = runs.get_run(summary.study_run_id).tags.get("tuning")
    if not isinstance(recorded, dict) or recorded.get("states") != summary.states:
        return None
    importances = recorded.get("importances")
    return importances if isinstance(importances, dict) else None


def _importances(study: optuna.Study) -> dict[str, float]:
    try:
        return {k: float(v) for k, v in optuna.importance.get_param_importances(study).items()}
    except (ValueError, RuntimeError) as exc:
        log.info("study %s: no parameter importances: %s", study.study_name, exc)
        return {}


def _row(trial: FrozenTrial, space: dict[str, Any]) -> TrialRow:
    duration = trial.duration.total_seconds() if trial.duration is not None else None
    return TrialRow(trial.number, trial.state.name.lower(), trial.value,
                    decoded(space, trial.params), trial.user_attrs.get(RUN_ID_ATTR), duration,
                    trial.user_attrs.get(ERROR_ATTR))
