"""The study runner with a cheap objective in place of the pipeline: the grid is covered exactly
once, the budget is exactly the trials asked for, a failing trial counts and the study goes on,
and a re-run with one worker and the same seed samples the same trials."""

from __future__ import annotations

import time
from itertools import product

import optuna
import pytest

from trainforge.errors import Conflict
from trainforge.tuning import StudyContext, create_study, load_study, open_storage, sample, work


def _context(project, overrides: list[str]) -> StudyContext:
    from trainforge.pipeline import plan_pipeline

    spec = plan_pipeline(project / "pipeline.yaml", overrides).spec
    return StudyContext(spec, None, tuple(overrides), "no-run", None)


def _run(url: str, name: str, context: StudyContext, objective) -> optuna.Study:
    storage = open_storage(url)
    study = create_study(storage, name, context, "pipeline.yaml")
    work(study, storage, objective, bounded=context.tuning.trials is not None)
    return study


def _objective(context: StudyContext):
    def objective(trial: optuna.Trial) -> float:
        values = sample(trial, context.tuning.space)
        return values["training.optimizer.lr"] * values["training.batch_size"]
    return objective


GRID = ["tuning.sampler=grid", "tuning.trials=100"]


def _with_lr_grid(project):
    path = project / "pipeline.yaml"
    path.write_text(path.read_text()
                    .replace("high: 0.03}", "high: 0.03, grid: [0.001, 0.003, 0.01]}")
                    .replace("high: 0.4}", "high: 0.4, grid: [0.0, 0.2]}"))
    return project


def test_the_grid_is_covered_exactly_once(digits_project, sqlite_url):
    context = _context(_with_lr_grid(digits_project), GRID)
    study = _run(sqlite_url, "grid", context, _objective(context))
    visited = [(t.params["training.optimizer.lr"], t.params["model.dropout"],
                t.params["training.batch_size"]) for t in study.trials]
    assert sorted(visited) == sorted(product([0.001, 0.003, 0.01], [0.0, 0.2], [32, 64, 128]))
    assert {t.state for t in study.trials} == {optuna.trial.TrialState.COMPLETE}


def test_a_smaller_budget_than_the_grid_visits_distinct_points(digits_project, sqlite_url):
    context = _context(_with_lr_grid(digits_project), [*GRID, "tuning.trials=4"])
    study = _run(sqlite_url, "grid", context, _objective(context))
    visited = [tuple(t.params.values()) for t in study.trials]
    assert len(visited) == 4 == len(set(visited))


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_one_worker_with_the_same_seed_picks_the_same_trials(digits_project, sqlite_url,
                                                             sampler):
    overrides = [f"tuning.sampler={sampler}", "tuning.trials=12", "tuning.seed=7"]
    context = _context(digits_project, overrides)
    first = _run(sqlite_url, "first", context, _objective(context))
    again = _run(sqlite_url, "again", context, _objective(context))
    other = _run(sqlite_url, "other", _context(digits_project, [*overrides, "tuning.seed=8"]),
                 _objective(context))
    assert [t.params for t in again.trials] == [t.params for t in first.trials]
    assert [t.params for t in other.trials] != [t.params for t in first.trials]
    assert len(first.trials) == 12


def test_a_failing_trial_counts_against_the_budget_and_the_study_goes_on(digits_project,
                                                                         sqlite_url):
    context = _context(digits_project, ["tuning.sampler=random", "tuning.trials=4"])

    def objective(trial: optuna.Trial) -> float:
        if trial.number == 1:
            raise ValueError("diverged")
        return trial.suggest_float("training.optimizer.lr", 0.001, 0.01)

    study = _run(sqlite_url, "failing", context, objective)
    states = [t.state.name for t in study.trials]
    assert states == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert study.trials[1].user_attrs["error"] == "diverged"


def test_a_study_name_is_taken_once_and_found_again(digits_project, sqlite_url):
    context = _context(digits_project, ["tuning.trials=2"])
    storage = open_storage(sqlite_url)
    create_study(storage, "named", context, "pipeline.yaml")
    with pytest.raises(Conflict, match="study 'named' exists already: join it with "
                                       "`trainforge tune-worker named`"):
        create_study(storage, "named", context, "pipeline.yaml")
    study, found = load_study(open_storage(sqlite_url), "named")
    assert found == context and study.direction.name == "MAXIMIZE"
    assert len(study.get_trials(states=(optuna.trial.TrialState.WAITING,))) == 2


def test_a_study_bounded_by_time_only_asks_for_trials_until_its_deadline(digits_project,
                                                                         sqlite_url):
    overrides = ["tuning.sampler=random", "tuning.trials=null", "tuning.timeout_minutes=1"]
    context = _context(digits_project, overrides)
    storage = open_storage(sqlite_url)
    study = create_study(storage, "timed", context, "pipeline.yaml")
    assert study.trials == []  # nothing enqueued: no trial budget

    def objective(trial: optuna.Trial) -> float:
        time.sleep(0.2)
        return trial.suggest_float("training.optimizer.lr", 0.001, 0.01)

    deadline = time.time() + 1.5
    ran = work(study, storage, objective, bounded=False, deadline=deadline)
    assert ran == len(study.trials) >= 2
    assert time.time() >= deadline
    assert {t.state for t in study.trials} == {optuna.trial.TrialState.COMPLETE}


def test_a_study_whose_trials_all_fail_fails_naming_the_first_error(digits_project):
    from trainforge.entities import RunStatus
    from trainforge.errors import TrainforgeError
    from trainforge.session import Session
    from trainforge.tuning import tune

    def failing(context, session, study):
        def objective(trial: optuna.Trial) -> float:
            raise TrainforgeError(f"trial {trial.number} recorded no 'val_rocauc'")
        return objective

    session = Session.open()
    with pytest.raises(TrainforgeError) as failed:
        tune(digits_project / "pipeline.yaml", ["tuning.trials=2", "tuning.refit=false"],
             objective=failing, session=session)

    message = ("study 'digits-tune': no trial completed (2 failed); trial 0: trial 0 recorded "
               "no 'val_rocauc'")
    assert str(failed.value) == message
    [study_run] = session.store.search_runs(None, None, None, 10).items
    assert study_run.status is RunStatus.FAILED and message in (study_run.error or "")
