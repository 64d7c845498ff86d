"""32 processes log 2,000 points each at once, to one SQLite file and to PostgreSQL: no error,
no point lost or duplicated (exact counts)."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from trainforge.entities import RunStatus
from trainforge.storage import SqlStore

WRITERS = 32
POINTS = 2000


def _log_points(url: str, home: str, barrier: Any, index: int) -> None:
    from trainforge.tracking import start_run

    os.environ["TRAINFORGE_HOME"] = home
    store = SqlStore(url)
    barrier.wait(timeout=120)
    with start_run("concurrency", store=store, code_dir=home, tags={"writer": index},
                   flush_interval=0.2, flush_every=500) as run:
        for step in range(POINTS):
            run.log_metric("loss", float(index), step)
    store.close()


@pytest.mark.slow
def test_32_processes_lose_and_duplicate_nothing(db_url: str, tmp_path: Path) -> None:
    context = multiprocessing.get_context("forkserver")
    # One import of trainforge in the fork server instead of 32 (2 cores run this suite).
    context.set_forkserver_preload(
        ["trainforge.tracking", "sqlalchemy.dialects.postgresql.psycopg"])
    SqlStore(db_url).close()  # migrate once, up front: the test is about logging
    barrier = context.Barrier(WRITERS)
    workers = [context.Process(target=_log_points, args=(db_url, str(tmp_path), barrier, i))
               for i in range(WRITERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=240)
    assert [w.exitcode for w in workers] == [0] * WRITERS
    store = SqlStore(db_url)
    try:
        runs = store.search_runs(filter="experiment = 'concurrency'", limit=100).items
        assert sorted(r.tags["writer"] for r in runs) == list(range(WRITERS))
        for run in runs:
            assert run.status is RunStatus.COMPLETED
            history = store.get_metric_history(run.run_id, "loss").items
            assert [p.step for p in history] == list(range(POINTS))
            assert {p.value for p in history} == {float(run.tags["writer"])}
    finally:
        store.close()
    assert not list((tmp_path / "spill").glob("*.jsonl"))
