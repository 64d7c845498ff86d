"""Studies run by several worker processes on one database (SQLite and PostgreSQL): the budget
is finished exactly, no trial runs twice, and a worker killed mid-trial leaves its trial
failed and retried by another worker, not counted twice."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter

import pytest
from home import home_store
from optuna.trial import TrialState
from quick_trials import QUICK

from trainforge.entities import RunStatus
from trainforge.tuning import load_study, open_storage, tune

TRIALS = 6


@pytest.mark.slow
def test_parallel_workers_finish_the_budget_once_each(digits_project, db_url, monkeypatch):
    """Four workers on two cores: more contention than two would meet (two workers run in
    the killed-worker test below)."""
    workers = 4
    monkeypatch.setenv("TRAINFORGE_DB", db_url)
    result = tune(digits_project / "pipeline.yaml", [*QUICK, "tuning.sampler=random"],
                  trials=TRIALS, workers=workers, study="parallel")
    assert result.worker_exit_codes == [0] * workers  # no worker died ("database is locked")
    summary = result.summary
    assert summary.states == {"complete": TRIALS}
    assert sorted(t.number for t in summary.trials) == list(range(TRIALS))
    runs = [home_store().get_run(t.run_id) for t in summary.trials]
    assert len({run.run_id for run in runs}) == TRIALS
    assert all(run.status is RunStatus.COMPLETED and run.parent_run_id == summary.study_run_id
               for run in runs)


def _kill_the_first_running_trial(url: str, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the worker process of the first trial seen running (its run names the pid)."""
    storage = open_storage(url)
    while not stop.is_set():
        try:
            study, _ = load_study(storage, "killed")
        except Exception:  # noqa: BLE001 - not created yet
            time.sleep(0.2)
            continue
        for trial in study.get_trials(states=(TrialState.RUNNING,)):
            if "run_id" in trial.user_attrs:
                pid = home_store().get_run(trial.user_attrs["run_id"]).system["process"]["pid"]
                os.kill(pid, signal.SIGKILL)
                killed.append(trial.number)
                return
        time.sleep(0.1)


@pytest.mark.slow
def test_a_worker_killed_mid_trial_leaves_it_failed_and_retried(digits_project, db_url,
                                                                 monkeypatch):
    monkeypatch.setenv("TRAINFORGE_DB", db_url)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_the_first_running_trial,
                              args=(db_url, killed, stop), daemon=True)
    killer.start()
    try:
        result = tune(digits_project / "pipeline.yaml",
                      [*QUICK, "training.epochs=3", "tuning.sampler=random",
                       "tuning.pruner.type=none"],
                      trials=4, workers=2, study="killed")
    finally:
        stop.set()
        killer.join()

    assert len(killed) == 1 and sorted(result.worker_exit_codes) == [-signal.SIGKILL, 0]
    study, _ = load_study(open_storage(db_url), "killed")
    states = Counter(t.state for t in study.trials)
    assert states == {TrialState.COMPLETE: 4, TrialState.FAIL: 1}
    failed = study.trials[killed[0]]
    assert failed.state is TrialState.FAIL
    retries = [t for t in study.trials
               if t.system_attrs.get("failed_trial") == failed.number]
    assert len(retries) == 1 and retries[0].state is TrialState.COMPLETE
    assert retries[0].params == failed.params
    assert result.summary.states == {"complete": 4, "fail": 1}
    dead_run = home_store().get_run(failed.user_attrs["run_id"])
    assert dead_run.status is RunStatus.CRASHED and "lost its worker" in dead_run.error
    assert home_store().get_run(retries[0].user_attrs["run_id"]).status is RunStatus.COMPLETED
