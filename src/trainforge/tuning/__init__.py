"""Hyperparameter tuning: a study over spec paths whose trials are ordinary tracked runs,
nested under the study's run, with Optuna sampling and pruning underneath.

    tune(SPEC)            plan, create the study, run its trials (here or in local workers),
                          record the best trial, importances and plots, refit
    run_worker(STUDY)     join a study from any machine sharing the database
    read_study(...)       trials, best trial, state counts, importances (`tune show`)
    list_studies(...)     the studies of a database (`tune list`)
    run_pbt(SPEC)         population-based training over trainforge's checkpoints, when the
                          spec has `tuning.pbt` (`tune` hands such a spec to it)
    read_lineage(...)     a PBT study's exploits (`pbt show`)

Optuna's state lives in the tracking database (a journal, `storage/sql_tuning_journal.py`),
opened with `open_storage(url)`. Names are imported on first use.

    >>> from trainforge.tuning import tune
    >>> result = tune("examples/digits/pipeline.yaml", trials=4)    # doctest: +SKIP
    >>> result.summary.best.params                                  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.tuning._objective import PipelineObjective, PruningReporter
    from trainforge.tuning._pbt import (
        PbtListener,
        PbtMemberResult,
        PbtResult,
        run_pbt,
    )
    from trainforge.tuning._pbt_lineage import ExploitRecord, IntervalScores, Lineage, read_lineage
    from trainforge.tuning._pbt_member import PbtMember
    from trainforge.tuning._results import (
        StudySummary,
        TrialRow,
        list_studies,
        read_study,
        summarize,
    )
    from trainforge.tuning._space import check_space, distribution, sample, trial_overrides
    from trainforge.tuning._study import (
        StudyContext,
        create_study,
        load_study,
        make_pruner,
        make_sampler,
        open_storage,
        quiet_optuna,
        trial_seed,
    )
    from trainforge.tuning._tune import TuneResult, study_name_of, tune
    from trainforge.tuning._worker import run_trial, run_worker, work

_EXPORTS = {
    "ExploitRecord": "trainforge.tuning._pbt_lineage",
    "IntervalScores": "trainforge.tuning._pbt_lineage",
    "Lineage": "trainforge.tuning._pbt_lineage",
    "PbtListener": "trainforge.tuning._pbt",
    "PbtMember": "trainforge.tuning._pbt_member",
    "PbtMemberResult": "trainforge.tuning._pbt",
    "PbtResult": "trainforge.tuning._pbt",
    "PipelineObjective": "trainforge.tuning._objective",
    "PruningReporter": "trainforge.tuning._objective",
    "StudyContext": "trainforge.tuning._study",
    "StudySummary": "trainforge.tuning._results",
    "TrialRow": "trainforge.tuning._results",
    "TuneResult": "trainforge.tuning._tune",
    "check_space": "trainforge.tuning._space",
    "create_study": "trainforge.tuning._study",
    "distribution": "trainforge.tuning._space",
    "list_studies": "trainforge.tuning._results",
    "load_study": "trainforge.tuning._study",
    "make_pruner": "trainforge.tuning._study",
    "make_sampler": "trainforge.tuning._study",
    "open_storage": "trainforge.tuning._study",
    "read_lineage": "trainforge.tuning._pbt_lineage",
    "read_study": "trainforge.tuning._results",
    "run_pbt": "trainforge.tuning._pbt",
    "run_trial": "trainforge.tuning._worker",
    "run_worker": "trainforge.tuning._worker",
    "sample": "trainforge.tuning._space",
    "study_name_of": "trainforge.tuning._tune",
    "summarize": "trainforge.tuning._results",
    "trial_overrides": "trainforge.tuning._space",
    "quiet_optuna": "trainforge.tuning._study",
    "trial_seed": "trainforge.tuning._study",
    "tune": "trainforge.tuning._tune",
    "work": "trainforge.tuning._worker",
}

__all__ = [
    "ExploitRecord",
    "IntervalScores",
    "Lineage",
    "PbtListener",
    "PbtMember",
    "PbtMemberResult",
    "PbtResult",
    "PipelineObjective",
    "PruningReporter",
    "StudyContext",
    "StudySummary",
    "TrialRow",
    "TuneResult",
    "check_space",
    "create_study",
    "distribution",
    "list_studies",
    "load_study",
    "make_pruner",
    "make_sampler",
    "open_storage",
    "quiet_optuna",
    "read_lineage",
    "read_study",
    "run_pbt",
    "run_trial",
    "run_worker",
    "sample",
    "study_name_of",
    "summarize",
    "trial_overrides",
    "trial_seed",
    "tune",
    "work",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
