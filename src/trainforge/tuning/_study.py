"""A study: Optuna's study in the tracking database, its sampler and pruner built from the
`tuning:` section, its trial budget and what a worker needs to join it.

    open_storage     the database URL → Optuna's journal storage there (heartbeats on)
    create_study     a new study named `name`: its budget enqueued, its spec and run recorded
    load_study       an existing study by name, with the context a worker runs its trials in
    make_sampler     grid | random | tpe | gp, each trial's sampling seeded from (seed, number)
    make_pruner      none | median | asha | hyperband

The budget of `trials` is enqueued when the study is created (each grid point, or an empty
trial whose values the sampler draws): workers take waiting trials one at a time (Optuna hands
each to exactly one worker), so any number of workers finish exactly the budget. A trial whose
worker died is failed by Optuna's heartbeat check and enqueued again as a new trial with the
same values (`RetryHeartbeatStaleTrialCallback`); the failed one does not count.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, TrialState

from trainforge.config import PipelineSpec, PrunerSpec, TuningSpec
from trainforge.entities import RunStatus
from trainforge.errors import Conflict, NotFound, TrainforgeError
from trainforge.storage import open_store
from trainforge.storage.sql_tuning_journal import SqlJournalBackend, SqlJournalStorage
from trainforge.tuning._space import grid

RUN_ID_ATTR = "run_id"  # the trial's user attr naming its tracked run
ERROR_ATTR = "error"  # the user attr of a failed trial: what went wrong


def quiet_optuna() -> None:
    """Optuna's own INFO lines (`A new study created in Journal ...`, each trial finished)
    kept off the output of an entry point: trainforge reports studies and trials itself.
    Its warnings still show."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def check_some_completed(study: optuna.Study) -> None:
    """`TrainforgeError` naming the first failed trial's error when trials ran and none
    completed, though some failed (pruned trials are the pruner's choice, not a failure)."""
    trials = study.get_trials(deepcopy=False)
    if any(t.state is TrialState.COMPLETE for t in trials):
        return
    failed = sorted((t for t in trials if t.state is TrialState.FAIL), key=lambda t: t.number)
    if failed:
        first = failed[0]
        raise TrainforgeError(
            f"study {study.study_name!r}: no trial completed ({len(failed)} failed); trial "
            f"{first.number}: {first.user_attrs.get(ERROR_ATTR, 'no error recorded')}")
HEARTBEAT_INTERVAL_S = 5
MAX_RETRIES = 3  # a trial whose workers keep dying is given up after this many retries
CONTEXT_KEY = "trainforge"  # the study user attr holding the spec, study run and deadline


@dataclass(frozen=True)
class StudyContext:
    """What every worker of a study reads back: the resolved spec (data paths absolute),
    the spec file and overrides it came from, the study's run and the wall-time deadline
    (seconds since the epoch, or None)."""

    spec: PipelineSpec
    spec_path: str | None
    overrides: tuple[str, ...]
    study_run_id: str
    deadline: float | None

    @property
    def tuning(self) -> TuningSpec:
        assert self.spec.tuning is not None
        return self.spec.tuning

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec.model_dump(mode="json"), "spec_path": self.spec_path,
                "overrides": list(self.overrides), "study_run_id": self.study_run_id,
                "deadline": self.deadline}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StudyContext:
        return cls(PipelineSpec.model_validate(data["spec"]), data["spec_path"],
                   tuple(data["overrides"]), data["study_run_id"], data["deadline"])


def open_storage(url: str, heartbeat_interval_s: int = HEARTBEAT_INTERVAL_S) -> SqlJournalStorage:
    """Optuna's storage in the database at `url`: a dead worker's trial is failed after two
    missed heartbeats, its run ended `crashed`, and the trial enqueued again; a trial that never
    beat (an ask/tell client's) is left running. It pickles (by URL) to other processes."""
    return SqlJournalStorage(SqlJournalBackend(url), heartbeat_interval_s=heartbeat_interval_s,
                             failed_trial_callback=RetryStaleTrial(url))


class RetryStaleTrial:
    """Optuna's `RetryHeartbeatStaleTrialCallback` (a copy of the trial, same values, waits
    for a worker; at most `MAX_RETRIES` times), which also ends the dead trial's run `crashed`
    (it stayed `running`: its process was gone before it could end it)."""

    def __init__(self, url: str) -> None:
        self._url = url
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self._retry = RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRIES)

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._retry(study, trial)
        run_id = trial.user_attrs.get(RUN_ID_ATTR)
        if run_id is None:
            return
        store = open_store(self._url)
        try:
            if store.get_run(run_id).status is RunStatus.RUNNING:
                store.end_run(run_id, RunStatus.CRASHED, f"crashed: trial {trial.number} of "
                              f"study {study.study_name} lost its worker (no heartbeat)")
        finally:
            store.close()


def create_study(storage: optuna.storages.BaseStorage, name: str,
                 context: StudyContext, source: str) -> optuna.Study:
    """A new study `name` with its budget enqueued; `Conflict` if the name is taken."""
    tuning = context.tuning
    budget = _budget(tuning, source)
    try:
        study = optuna.create_study(storage=storage, study_name=name,
                                    direction=tuning.objective.direction,
                                    sampler=make_sampler(tuning),
                                    pruner=make_pruner(tuning.pruner))
    except optuna.exceptions.DuplicatedStudyError:
        raise Conflict(f"study {name!r} exists already: join it with `trainforge tune-worker "
                       f"{name}`, or name a new one with --study") from None
    study.set_user_attr(CONTEXT_KEY, context.to_json())
    for values in budget:
        study.enqueue_trial(values)
    return study


def load_study(storage: optuna.storages.BaseStorage, name: str) -> tuple[optuna.Study,
                                                                         StudyContext]:
    """The study `name` and its context; `NotFound` if there is no such study of trainforge."""
    try:
        summary = {s.study_name: s for s in optuna.get_all_study_summaries(storage, False)}[name]
    except KeyError:
        raise NotFound(f"study {name!r} not found") from None
    if CONTEXT_KEY not in summary.user_attrs:
        raise NotFound(f"study {name!r} was not created by `trainforge tune`")
    context = StudyContext.from_json(summary.user_attrs[CONTEXT_KEY])
    study = optuna.load_study(study_name=name, storage=storage,
                              sampler=make_sampler(context.tuning),
                              pruner=make_pruner(context.tuning.pruner))
    return study, context


def make_sampler(tuning: TuningSpec) -> BaseSampler:
    """The sampler `tuning.sampler` names; a grid study's trials are all enqueued, so its
    sampler never draws."""
    factories: dict[str, Callable[[int], BaseSampler]] = {
        "grid": lambda seed: optuna.samplers.RandomSampler(seed=seed),
        "random": lambda seed: optuna.samplers.RandomSampler(seed=seed),
        "tpe": lambda seed: optuna.samplers.TPESampler(seed=seed),
        "gp": lambda seed: optuna.samplers.GPSampler(seed=seed),
    }
    return TrialSeededSampler(factories[tuning.sampler], tuning.seed)


def make_pruner(spec: PrunerSpec) -> optuna.pruners.BasePruner:
    """The pruner `spec.type` names; reports are numbered 1, 2, ... (resources)."""
    if spec.type == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=spec.startup_trials,
                                           n_warmup_steps=spec.warmup_reports)
    if spec.type == "asha":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=spec.min_resource, reduction_factor=spec.reduction_factor)
    if spec.type == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=spec.min_resource,
                                              reduction_factor=spec.reduction_factor)
    return optuna.pruners.NopPruner()


def trial_seed(seed: int, number: int) -> int:
    """The seed of trial `number`'s sampling in a study seeded `seed`."""
    return random.Random(f"{seed}:{number}").getrandbits(32)


class TrialSeededSampler(BaseSampler):
    """An Optuna sampler rebuilt for each trial, seeded from (study seed, trial number): which
    worker runs a trial does not change what it samples given the same finished trials, and a
    study re-run with one worker and the same seed samples the same values."""

    def __init__(self, factory: Callable[[int], BaseSampler], seed: int) -> None:
        self._factory = factory
        self._seed = seed
        self._inner = factory(seed)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._inner = self._factory(trial_seed(self._seed, trial.number))
        self._inner.before_trial(study, trial)

    def infer_relative_search_space(self, study: optuna.Study,
                                    trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._inner.sample_relative(study, trial, search_space)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._inner.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self._inner.after_trial(study, trial, state, values)


def _budget(tuning: TuningSpec, source: str) -> list[dict[str, Any]]:
    """The trials to enqueue: every grid point (in an order shuffled by the seed, the first
    `trials` of them), `trials` empty trials, or none for a study bounded by time only."""
    if tuning.sampler == "grid":
        axes = grid(tuning.space, source)
        points = [dict(zip(axes, values, strict=True)) for values in product(*axes.values())]
        random.Random(tuning.seed).shuffle(points)
        return points[:tuning.trials]
    return [{} for _ in range(tuning.trials or 0)]
