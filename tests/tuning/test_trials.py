"""Trials as tracked runs of the digits pipeline: nested under the study's run with their trial
number and values, pruned at an epoch boundary and ended `pruned`, and the study's run holding
the best trial, importances and plots."""

from __future__ import annotations

import optuna
import pytest
from home import home_artifacts, home_store
from quick_trials import QUICK

from trainforge.config import Settings
from trainforge.entities import RunStatus
from trainforge.pipeline import plan_pipeline
from trainforge.session import Session
from trainforge.tracking import start_run
from trainforge.tuning import (
    PipelineObjective,
    StudyContext,
    create_study,
    load_study,
    open_storage,
    read_study,
    tune,
    work,
)


@pytest.mark.slow
def test_a_trial_worse_than_the_median_at_its_first_report_is_pruned_there(digits_project):
    overrides = [*QUICK, "training.epochs=3", "tuning.trials=1", "tuning.pruner.type=median",
                 "tuning.pruner.startup_trials=1"]
    plan = plan_pipeline(digits_project / "pipeline.yaml", overrides)
    settings = Settings.from_env()
    storage = open_storage(settings.database_url.get_secret_value())
    with start_run("digits", code_dir=digits_project) as study_run:
        context = StudyContext(plan.spec, None, (), study_run.run_id, None)
        study = create_study(storage, "pruning", context, "pipeline.yaml")
        study.add_trial(optuna.trial.create_trial(  # a finished trial perfect at every report
            value=1.0, intermediate_values={1: 1.0, 2: 1.0, 3: 1.0}))
        work(study, storage, PipelineObjective(context, Session.open(), "pruning"),
             bounded=True)

    trial = study.trials[0]
    assert trial.state is optuna.trial.TrialState.PRUNED
    assert list(trial.intermediate_values) == [1]  # reported once, then stopped
    run = home_store().get_run(trial.user_attrs["run_id"])
    assert run.status is RunStatus.PRUNED and run.error.startswith("pruned at step")
    assert run.parent_run_id == study_run.run_id
    assert len(home_store().get_metric_history(run.run_id, "val_accuracy").items) == 1
    assert run.params["trial"]["number"] == 0
    assert run.system["tuning"] == {"study": "pruning", "trial": 0}


@pytest.mark.slow
def test_a_study_records_its_trials_as_nested_runs_and_its_findings_on_its_run(digits_project):
    result = tune(digits_project / "pipeline.yaml", [*QUICK, "tuning.sampler=random"], trials=3,
                  study="nested")
    summary = result.summary
    assert summary.states == {"complete": 3} and len(summary.trials) == 3
    store = home_store()
    study_run = store.get_run(summary.study_run_id)
    trial_runs = [store.get_run(t.run_id) for t in summary.trials]
    for trial, run in zip(summary.trials, trial_runs, strict=True):
        assert run.parent_run_id == study_run.run_id and run.status is RunStatus.COMPLETED
        assert run.params["trial"] == {"number": trial.number, "params": trial.params}
        assert run.params["training"]["batch_size"] == trial.params["training.batch_size"]
        assert run.metrics["val_accuracy"] == trial.value
        assert run.system["checkpoint"]["location"].startswith(run.artifact_uri)
    assert store.list_model_versions().items == ()  # trials never register; refit is off here

    best = max(summary.trials, key=lambda t: t.value)
    assert summary.best == best
    assert study_run.status is RunStatus.COMPLETED
    assert study_run.metrics["best_val_accuracy"] == best.value
    recorded = study_run.tags["tuning"]
    assert recorded["best"] == {"trial": best.number, "value": best.value,
                                "params": best.params, "run_id": best.run_id}
    assert set(recorded["importances"]) == set(best.params)
    assert study_run.system["tuning"] == {"study": "nested"}
    names = home_artifacts().list_names(study_run.run_id)
    assert {f"tuning/{name}.png" for name in result.plots} <= set(names)
    assert {"optimization_history", "parallel_coordinate"} <= set(result.plots)


    storage = open_storage(Settings.from_env().database_url.get_secret_value())
    assert read_study(storage, "nested", store).importances == recorded["importances"]
    store.set_tags(study_run.run_id, {"tuning": {**recorded, "importances": {"marker": 1.0}}})
    assert read_study(storage, "nested", store).importances == {"marker": 1.0}  # read, not fitted
    study, _ = load_study(storage, "nested")
    done = study.trials[0]
    study.add_trial(optuna.trial.create_trial(params=done.params, value=done.value,
                                              distributions=done.distributions))
    refitted = read_study(storage, "nested", store)  # a trial more than its run recorded
    assert refitted.importances.keys() == set(best.params)


@pytest.mark.slow
def test_a_trial_reports_every_n_steps_a_metric_the_trainer_logs_there(digits_project):
    overrides = [*QUICK, "training.epochs=2", "training.log_every_n_steps=5",
                 "tuning.report_every_n_steps=5", "tuning.objective.metric=train_loss",
                 "tuning.objective.direction=minimize", "tuning.sampler=random"]
    result = tune(digits_project / "pipeline.yaml", overrides, trials=1, study="steps")
    trial = result.summary.trials[0]
    study, _ = load_study(open_storage(Settings.from_env().database_url.get_secret_value()),
                          "steps")
    reports = study.trials[0].intermediate_values
    steps = [p.step for p in home_store().get_metric_history(trial.run_id, "train_loss").items]
    assert list(reports) == list(range(1, len(reports) + 1))  # numbered 1, 2, ...
    assert len(reports) == len([s for s in steps if s % 5 == 0]) >= 2
