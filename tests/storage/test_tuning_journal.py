"""Optuna's journal in the tracking database: log numbers dense and ordered across processes
writing at once, on SQLite and PostgreSQL; heartbeats that go stale; the studies of a worker
that opened the database later."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import optuna
import pytest

from trainforge.errors import StoreError
from trainforge.storage.sql_tuning_journal import SqlJournalBackend, SqlJournalStorage

WRITERS = 4
APPENDS = 25


def _append_many(url: str, writer: int, barrier: Any) -> None:
    backend = SqlJournalBackend(url)
    barrier.wait()
    for i in range(APPENDS):
        backend.append_logs([{"writer": writer, "i": i, "part": 0},
                             {"writer": writer, "i": i, "part": 1}])
    backend.close()


@pytest.mark.slow
def test_processes_appending_at_once_get_dense_ordered_log_numbers(db_url: str) -> None:
    SqlJournalBackend(db_url).close()  # migrated once, before the race
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(WRITERS)
    writers = [context.Process(target=_append_many, args=(db_url, w, barrier))
               for w in range(WRITERS)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
    assert [writer.exitcode for writer in writers] == [0] * WRITERS

    backend = SqlJournalBackend(db_url)
    logs = backend.read_logs(0)
    assert len(logs) == WRITERS * APPENDS * 2
    for first, second in zip(logs[::2], logs[1::2], strict=True):  # one append stays together
        assert (first["writer"], first["i"], first["part"]) == (second["writer"], second["i"], 0)
        assert second["part"] == 1
    for writer in range(WRITERS):  # each writer's appends in the order it made them
        assert [log["i"] for log in logs if log["writer"] == writer][::2] == list(range(APPENDS))
    assert backend.read_logs(len(logs) - 3) == logs[-3:]
    backend.close()


def test_a_second_worker_replays_the_studies_of_the_first(db_url: str) -> None:
    first = SqlJournalStorage(SqlJournalBackend(db_url))
    study = optuna.create_study(storage=first, study_name="s", direction="maximize")
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=3)

    second = optuna.load_study(study_name="s", storage=SqlJournalStorage(SqlJournalBackend(db_url)))
    assert [t.params for t in second.trials] == [t.params for t in study.trials]
    assert second.best_value == study.best_value


def test_a_running_trial_without_fresh_heartbeats_is_stale(db_url: str) -> None:
    storage = SqlJournalStorage(SqlJournalBackend(db_url), heartbeat_interval_s=1,
                                grace_period_s=1)
    study = optuna.create_study(storage=storage, study_name="s")
    alive, dead, silent = study.ask(), study.ask(), study.ask()
    storage.record_heartbeat(dead._trial_id)
    assert storage._get_stale_trial_ids(study._study_id) == []
    time.sleep(1.2)
    storage.record_heartbeat(alive._trial_id)
    # no beat at all (an ask/tell client's trial): never stale, as in Optuna
    assert storage._get_stale_trial_ids(study._study_id) == [dead._trial_id]
    study.tell(dead, 1.0)
    study.tell(silent, 1.0)
    time.sleep(1.2)
    assert storage._get_stale_trial_ids(study._study_id) == [alive._trial_id]  # finished: gone



def test_a_servers_address_is_refused_naming_what_tuning_needs() -> None:
    with pytest.raises(StoreError, match="tuning needs the database itself") as caught:
        SqlJournalBackend("http://:tf_secret@127.0.0.1:8000")
    assert "tf_secret" not in str(caught.value) and "127.0.0.1:8000" in str(caught.value)
