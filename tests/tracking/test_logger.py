"""The background logger: bulk writes, spill file while the database is away, exact replay."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from trainforge.config import Settings
from trainforge.entities import MetricPoint, RunStatus
from trainforge.errors import StoreUnavailable
from trainforge.storage import SqlStore, all_items
from trainforge.storage.artifacts import open_artifact_store
from trainforge.tracking import RunHandle, replay_spills, start_run
from trainforge.tracking._logger import MetricLogger
from trainforge.tracking._spill import SpillFile


class Flaky:
    """A store whose calls fail with StoreUnavailable while `down`; `lose_acks` makes metric
    writes commit and then fail anyway (a lost commit acknowledgement)."""

    def __init__(self, store: SqlStore) -> None:
        self.store, self.down, self.lose_acks = store, False, False
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            if self.down:
                raise StoreUnavailable("connection refused")
            result = method(*args, **kwargs)
            if self.lose_acks and name == "log_metrics":
                raise StoreUnavailable("connection lost after commit")
            return result
        return call


@pytest.fixture
def sqlite_store(sqlite_url: str):
    store = SqlStore(sqlite_url)
    yield store
    store.close()


@pytest.fixture
def flaky(sqlite_store: SqlStore) -> Flaky:
    return Flaky(sqlite_store)


def _start(store: Any, tmp_path: Path, **options: Any) -> RunHandle:
    return start_run("exp", store=store, artifacts=open_artifact_store(tmp_path / "a"),
                     code_dir=tmp_path, **options)


def _count(store: SqlStore, run_id: str, key: str = "loss") -> list[int]:
    history = all_items(lambda cursor: store.get_metric_history(run_id, key, cursor=cursor))
    return [p.step for p in history]


def test_points_are_written_in_bulk_by_the_thread_without_flush(sqlite_store, tmp_path):
    run = _start(sqlite_store, tmp_path, flush_interval=0.05, flush_every=100_000)
    for step in range(3000):
        run.log_metric("loss", 1.0, step)
    deadline = time.monotonic() + 10
    while len(_count(sqlite_store, run.run_id)) < 3000 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _count(sqlite_store, run.run_id) == list(range(3000))
    run.end()


def test_logging_does_not_wait_on_a_stuck_database(sqlite_store, tmp_path):
    release = threading.Event()
    real = sqlite_store.log_metrics

    def stuck(*args: Any, **kwargs: Any) -> bool:
        release.wait(30)
        return real(*args, **kwargs)

    run = _start(sqlite_store, tmp_path, flush_interval=0.01)
    sqlite_store.log_metrics = stuck  # type: ignore[method-assign]
    run.log_metric("loss", 1.0, 0)
    time.sleep(0.1)  # the thread is now blocked inside the store
    started = time.perf_counter()
    for step in range(1, 20_001):
        run.log_metric("loss", 1.0, step)
    assert time.perf_counter() - started < 2.0
    release.set()
    assert run.flush() is True
    assert len(_count(sqlite_store, run.run_id)) == 20_001
    run.end()


def test_outage_spills_everything_in_order_and_replays_it_exactly_once(flaky, tmp_path):
    run = _start(flaky, tmp_path, flush_interval=0.05)
    run.log_metrics({"loss": 1.0}, step=0)
    assert run.flush() is True
    flaky.down = True
    for step in range(1, 1001):
        run.log_metric("loss", 1.0, step)
    run.set_tags({"phase": "outage"})
    run.set_summary({"best": 0.5})
    run.log_params({"lr": 0.1})
    assert run.flush() is False
    spill = Settings.from_env().spill_dir / f"{run.run_id}.jsonl"
    ops = [json.loads(line)["op"] for line in spill.read_text().splitlines()]
    assert set(ops) == {"metrics", "tags", "summary", "params"}
    flaky.down = False
    for step in range(1001, 1501):
        run.log_metric("loss", 1.0, step)
    assert run.flush() is True and not spill.exists()
    stored = run.end()
    assert _count(flaky.store, run.run_id) == list(range(1501))
    assert stored.tags == {"phase": "outage"} and stored.params == {"lr": 0.1}
    assert stored.metrics["best"] == 0.5 and stored.status is RunStatus.COMPLETED


def test_a_lost_commit_acknowledgement_does_not_duplicate_points(flaky, tmp_path):
    run = _start(flaky, tmp_path, flush_interval=0.05)
    flaky.lose_acks = True
    for step in range(500):
        run.log_metric("loss", 1.0, step)
    assert run.flush() is False  # committed, but the logger could not know
    flaky.lose_acks = False
    assert run.flush() is True
    run.end()
    assert _count(flaky.store, run.run_id) == list(range(500))


def test_end_during_an_outage_keeps_the_end_for_replay(flaky, tmp_path):
    run = _start(flaky, tmp_path, flush_interval=0.05)
    flaky.down = True
    for step in range(300):
        run.log_metric("loss", 1.0, step)
    assert run.end(RunStatus.FAILED, "boom") is None
    assert flaky.store.get_run(run.run_id).status is RunStatus.RUNNING
    flaky.down = False
    assert replay_spills(flaky.store) == {run.run_id: 2}
    stored = flaky.store.get_run(run.run_id)
    assert (stored.status, stored.error) == (RunStatus.FAILED, "boom")
    assert _count(flaky.store, run.run_id) == list(range(300))
    assert replay_spills(flaky.store) == {}


def test_a_full_buffer_overflows_to_the_spill_file_not_to_memory(flaky, sqlite_store, tmp_path):
    run = start_run("exp", store=sqlite_store, artifacts=open_artifact_store(tmp_path / "a"),
                    code_dir=tmp_path)
    run.end()
    spill = SpillFile(tmp_path / "spill" / f"{run.run_id}.jsonl")
    flaky.down = True
    logger = MetricLogger(flaky, run.run_id, spill, flush_interval=60, flush_points=10**9,
                          max_buffered=1000)
    logger.add([("loss", 1.0, step, 0.0) for step in range(2500)])
    assert len(logger._buffer) < 1000 and spill.exists()
    flaky.down = False
    assert logger.flush() is True
    logger.close()
    assert _count(sqlite_store, run.run_id) == list(range(2500))


def test_a_torn_last_line_is_skipped_and_other_runs_files_are_left(sqlite_store, tmp_path):
    run = _start(sqlite_store, tmp_path)
    run.end()
    directory = tmp_path / "spill"
    SpillFile(directory / f"{run.run_id}.jsonl").append([
        {"op": "metrics", "batch": "b1", "points": [["loss", 2.0, 7, 1.0]]}])
    with open(directory / f"{run.run_id}.jsonl", "a") as torn:
        torn.write('{"op": "metr')
    (directory / "not-a-run.jsonl").write_text('{"op": "tags", "values": {}}\n')
    assert replay_spills(sqlite_store, directory) == {run.run_id: 1}
    assert _count(sqlite_store, run.run_id) == [7]
    assert (directory / "not-a-run.jsonl").exists()


def test_spill_appends_from_many_threads_interleave_whole_lines(tmp_path):
    spill = SpillFile(tmp_path / "r.jsonl")

    def append(i: int) -> None:
        for j in range(50):
            spill.append([{"op": "tags", "values": {"k": f"{i}-{j}" * 100}}])

    threads = [threading.Thread(target=append, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen: list[str] = []
    spill.replay(lambda record: seen.append(record["values"]["k"]))
    assert len(set(seen)) == 400 and not spill.exists()


def test_replay_keeps_what_it_could_not_apply(tmp_path):
    spill = SpillFile(tmp_path / "r.jsonl")
    spill.append([{"op": "tags", "values": {"n": n}} for n in range(5)])
    applied: list[int] = []

    def apply(record: dict[str, Any]) -> None:
        if record["values"]["n"] == 3:
            raise StoreUnavailable("down again")
        applied.append(record["values"]["n"])

    with pytest.raises(StoreUnavailable):
        spill.replay(apply)
    assert applied == [0, 1, 2]
    assert spill.replay(lambda r: applied.append(r["values"]["n"])) == 2
    assert applied == [0, 1, 2, 3, 4]


def test_metric_points_keep_nan_and_infinity_through_the_spill_file(flaky, tmp_path):
    run = _start(flaky, tmp_path, flush_interval=0.05)
    flaky.down = True
    run.log_metrics({"a": float("nan"), "b": float("inf")}, step=1)
    run.flush()
    flaky.down = False
    run.end()
    [a] = flaky.store.get_metric_history(run.run_id, "a").items
    [b] = flaky.store.get_metric_history(run.run_id, "b").items
    assert a.value != a.value and b.value == float("inf")
    assert isinstance(b, MetricPoint)
