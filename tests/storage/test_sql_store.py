"""What the SQL store adds to the contract (`tests/contracts/`): bulk statements, locking under
concurrent writers, URLs. Runs on every backend (the `store` fixture: SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import event

from trainforge.entities import MetricPoint, ModelStage, Run
from trainforge.errors import StoreError
from trainforge.storage import SqlStore, all_items


def _run(store: SqlStore, experiment: str = "exp", **kwargs: Any) -> Run:
    experiment_id = store.get_or_create_experiment(experiment).experiment_id
    return store.create_run(experiment_id, {"lr": 0.1}, {"python": "3"}, "file:///a", **kwargs)


def _in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(work, range(count)))


def test_log_metrics_takes_a_constant_number_of_statements(store: SqlStore) -> None:
    """One bulk statement for the points (COPY on PostgreSQL, which bypasses SQLAlchemy's
    events; one executemany INSERT on SQLite), plus a run check and the latest-value upsert."""
    run = _run(store)
    statements: list[tuple[str, bool]] = []

    def listener(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
                 executemany: bool) -> None:
        statements.append((statement, executemany))

    event.listen(store._engine, "before_cursor_execute", listener)
    try:
        for count in (500, 5000):
            statements.clear()
            store.log_metrics(run.run_id, [MetricPoint("x", float(i), i, 0.0)
                                           for i in range(count)], batch_id=str(count))
            assert len(statements) <= 5
    finally:
        event.remove(store._engine, "before_cursor_execute", listener)
    inserts = [many for sql, many in statements if sql.startswith("INSERT INTO metrics ")]
    assert inserts == ([True] if store._dialect == "sqlite" else [])
    assert len(store.get_metric_history(run.run_id, "x").items) == 5500


def test_a_page_is_one_query_fetching_one_row_more(store: SqlStore) -> None:
    for _ in range(5):
        _run(store)
    statements: list[tuple[str, Any]] = []

    def listener(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
                 executemany: bool) -> None:
        statements.append((statement, parameters))

    event.listen(store._engine, "before_cursor_execute", listener)
    try:
        page = store.list_runs(limit=2)
        store.list_runs(limit=2, cursor=page.next_cursor)
    finally:
        event.remove(store._engine, "before_cursor_execute", listener)
    pages = [(sql, parameters) for sql, parameters in statements if "ORDER BY" in sql]
    assert len(pages) == 2
    assert all(3 in (parameters.values() if isinstance(parameters, dict) else parameters)
               for _, parameters in pages)


def test_get_or_create_experiment_is_race_free(store: SqlStore) -> None:
    ids = _in_threads(8, lambda _: store.get_or_create_experiment("race").experiment_id)
    assert len(set(ids)) == 1
    assert [e.name for e in store.list_experiments().items] == ["race"]


@pytest.mark.parametrize("merge", ["log_params", "set_tags", "set_system"])
def test_concurrent_merges_into_one_run_lose_no_key(store: SqlStore, merge: str) -> None:
    run = _run(store)
    _in_threads(8, lambda i: getattr(store, merge)(run.run_id, {f"k{i}": i}))
    stored = store.get_run(run.run_id)
    merged = {"log_params": stored.params, "set_tags": stored.tags, "set_system": stored.system}
    assert {k: v for k, v in merged[merge].items() if k.startswith("k")} == {
        f"k{i}": i for i in range(8)}


def test_concurrent_registrations_get_distinct_versions(store: SqlStore) -> None:
    run = _run(store)
    versions = _in_threads(
        8, lambda _: store.create_model_version("m", run.run_id, "u", ModelStage.NONE, {}).version
    )
    assert sorted(versions, key=int) == [str(i) for i in range(1, 9)]
    listed = all_items(lambda cursor: store.list_model_versions("m", limit=3, cursor=cursor))
    assert [v.version for v in listed] == [str(i) for i in range(1, 9)]


@pytest.mark.parametrize("url", ["mysql://root:secret@localhost/db", "not a url",
                                 "postgresql://root:secret@localhost:port/db"])
def test_unusable_url_is_refused_naming_what_is_expected(url: str) -> None:
    with pytest.raises(StoreError, match="expected sqlite:///") as raised:
        SqlStore(url)
    assert "secret" not in str(raised.value)
    assert raised.value.__cause__ is None and "secret" not in str(raised.value.__context__)


def test_the_repr_hides_the_password(sqlite_url: str) -> None:
    store = SqlStore(sqlite_url)
    try:
        assert repr(store) == f"SqlStore({sqlite_url!r})"
        assert not hasattr(store, "url")
    finally:
        store.close()
