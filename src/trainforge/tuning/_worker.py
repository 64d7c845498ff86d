"""The worker loop: take a study's waiting trials one at a time and run them, until its budget is
spent or its wall-time deadline passes; and local worker processes started by `tune --workers`.

Rules:
- each worker holds its own Optuna study object over the shared storage; Optuna's journal hands
  a waiting trial to exactly one worker (the first to mark it running), so no trial runs twice;
- while a trial runs, a thread records its heartbeat every interval; a waiting trial's first
  heartbeat is recorded before the worker claims it, so no trial a bounded study's worker
  holds is without one;
- before taking a trial a worker fails the running trials whose heartbeat went stale (their
  worker died), and Optuna's retry callback enqueues each again as a new waiting trial with the
  same values; as in Optuna, a running trial that never beat (an ask/tell client's) is left
  running, and a bounded study's workers wait for it to end;
- a bounded study (a `trials` budget) ends when no trial waits and none runs; one bounded by
  time only asks the sampler for new trials until the deadline;
- an objective raising `optuna.TrialPruned` ends its trial PRUNED; any other exception ends it
  FAIL (logged, with the error as the trial's user attr `error`) and the worker goes on.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import fail_stale_trials
from optuna.trial import TrialState

from trainforge.config import Settings
from trainforge.session import Session
from trainforge.tuning._objective import PipelineObjective
from trainforge.tuning._study import ERROR_ATTR, load_study, open_storage

if TYPE_CHECKING:
    from trainforge.storage.sql_tuning_journal import SqlJournalStorage

log = logging.getLogger("trainforge")
Objective = Callable[[optuna.Trial], float]


def run_worker(study_name: str, *, session: Session | None = None) -> int:
    """Join the study `study_name` in the session's database and run its trials as pipeline
    runs until it is done (`NotFound` if there is no such study); returns the trials run."""
    session = session or Session.open()
    storage = open_storage(session.settings.database_url.get_secret_value())
    study, context = load_study(storage, study_name)
    objective = PipelineObjective(context, session, study_name)
    return work(study, storage, objective, bounded=context.tuning.trials is not None,
                deadline=context.deadline)


def work(study: optuna.Study, storage: SqlJournalStorage, objective: Objective, *,
         bounded: bool, deadline: float | None = None) -> int:
    """Run trials of `study` as the module docstring says; returns how many this worker ran."""
    interval = storage.get_heartbeat_interval() or 1
    ran = 0
    while deadline is None or time.time() < deadline:
        _fail_stale_trials(study)
        trial = _take_waiting(study, storage) if bounded else _ask(study)
        if trial is not None:
            run_trial(study, storage, trial, objective)
            ran += 1
        elif _running(study):
            time.sleep(min(interval, 1.0))  # another worker's trial may yet need a retry
        else:
            break
    return ran


def run_trial(study: optuna.Study, storage: SqlJournalStorage, trial: optuna.Trial,
              objective: Objective) -> TrialState:
    """Run one trial with its heartbeat going, and tell Optuna how it ended."""
    with _heartbeat(storage, trial._trial_id):
        try:
            value = objective(trial)
        except optuna.TrialPruned:
            study.tell(trial, state=TrialState.PRUNED)
            return TrialState.PRUNED
        except Exception as exc:  # noqa: BLE001 - one failed trial does not end the study
            log.warning("trial %d failed: %s", trial.number, exc)
            trial.set_user_attr(ERROR_ATTR, str(exc))
            study.tell(trial, state=TrialState.FAIL)
            return TrialState.FAIL
    study.tell(trial, value)
    return TrialState.COMPLETE


def start_local_workers(study_name: str, count: int,
                        settings: Settings) -> list[subprocess.Popen[bytes]]:
    """`count` worker processes (`python -m trainforge.tuning STUDY`) on this machine, with
    the settings' database, home and artifact root, sharing the CPU cores between them (each
    gets `OMP_NUM_THREADS` = cores / count unless the environment sets it)."""
    threads = str(max(1, (os.cpu_count() or 1) // count))
    env = {"OMP_NUM_THREADS": threads, **os.environ, **settings.as_env()}
    return [subprocess.Popen([sys.executable, "-m", "trainforge.tuning", study_name], env=env)
            for _ in range(count)]


def wait_for(workers: Sequence[subprocess.Popen[bytes]]) -> list[int]:
    """The exit codes of `workers`, once all have ended; Ctrl+C stops them all."""
    try:
        return [worker.wait() for worker in workers]
    except KeyboardInterrupt:
        for worker in workers:
            worker.terminate()
        raise


def _take_waiting(study: optuna.Study, storage: SqlJournalStorage) -> optuna.Trial | None:
    """A waiting trial, now running in this worker (no other worker gets it), or None. Its
    heartbeat is recorded first: a worker that dies right after the claim leaves a trial that
    goes stale (and is retried), not one running for ever."""
    for frozen in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        storage.record_heartbeat(frozen._trial_id)
        try:
            if storage.set_trial_state_values(frozen._trial_id, TrialState.RUNNING):
                return optuna.Trial(study, frozen._trial_id)
        except UpdateFinishedTrialError:
            continue
    return None


def _ask(study: optuna.Study) -> optuna.Trial:
    """A new trial (a study bounded by time only); this loop runs the heartbeats itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "heartbeat ... used with optimize"
        return study.ask()


def _fail_stale_trials(study: optuna.Study) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        fail_stale_trials(study)


def _running(study: optuna.Study) -> bool:
    return bool(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


@contextmanager
def _heartbeat(storage: SqlJournalStorage, trial_id: int) -> Iterator[None]:
    """Record the trial's heartbeat now and every interval while the block runs."""
    stop = threading.Event()
    interval = storage.get_heartbeat_interval() or 1

    def beat() -> None:
        while not stop.wait(interval):
            try:
                storage.record_heartbeat(trial_id)
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried next interval
                log.warning("trial heartbeat not recorded: %s", exc)

    storage.record_heartbeat(trial_id)
    thread = threading.Thread(target=beat, daemon=True, name=f"trainforge-trial-{trial_id}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
