"""The tracking store contract, run on every backend (the `store` fixture: SQLite, PostgreSQL)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import event

from trainforge.entities import (
    DataVersion,
    MetricPoint,
    ModelStage,
    Pipeline,
    Run,
    RunStatus,
)
from trainforge.errors import Conflict, NotFound, StoreError
from trainforge.storage import SqlStore

MISSING = "0" * 32


def _run(store: SqlStore, experiment: str = "exp", **kwargs: Any) -> Run:
    experiment_id = store.get_or_create_experiment(experiment).experiment_id
    return store.create_run(experiment_id, {"lr": 0.1}, {"python": "3"}, "file:///a", **kwargs)


def _in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(work, range(count)))


# experiments and pipelines


def test_get_or_create_experiment_returns_the_same_experiment(store: SqlStore) -> None:
    created = store.get_or_create_experiment("mnist", description="digits")
    again = store.get_or_create_experiment("mnist", description="ignored")
    assert again == created
    assert (created.name, created.description, created.owner) == ("mnist", "digits", "")
    assert len(created.experiment_id) == 32
    assert store.get_experiment(created.experiment_id) == created


def test_experiment_names_are_unique_and_listed_by_name(store: SqlStore) -> None:
    for name in ["b", "a", "c", "a"]:
        store.get_or_create_experiment(name)
    assert [e.name for e in store.list_experiments()] == ["a", "b", "c"]


def test_get_or_create_experiment_is_race_free(store: SqlStore) -> None:
    ids = _in_threads(8, lambda _: store.get_or_create_experiment("race").experiment_id)
    assert len(set(ids)) == 1
    assert [e.name for e in store.list_experiments()] == ["race"]


def test_upsert_pipeline_inserts_then_replaces(store: SqlStore) -> None:
    first = Pipeline("p1", "train", {"steps": [{"name": "ingest"}]}, schedule="0 * * * *")
    assert store.upsert_pipeline(first) == first
    second = Pipeline("p1", "train-v2", {"steps": []}, created_by="ana")
    assert store.upsert_pipeline(second) == second
    assert _run(store, pipeline_id="p1").pipeline_id == "p1"


# runs


def test_run_lifecycle_merges_tags_and_summary_metrics(store: SqlStore) -> None:
    run = _run(store, git_commit="abc123", git_dirty=True)
    assert run.status is RunStatus.RUNNING
    assert (run.metrics, run.tags, run.ended_at, run.duration_s) == ({}, {}, None, None)
    assert (run.git_commit, run.git_dirty, run.error) == ("abc123", True, None)

    store.set_tags(run.run_id, {"team": "vision", "try": 1})
    store.set_tags(run.run_id, {"try": 2})
    store.set_summary_metrics(run.run_id, {"loss": 0.5, "acc": 0.8})
    store.set_summary_metrics(run.run_id, {"loss": 0.25})
    ended = store.end_run(run.run_id, RunStatus.COMPLETED)

    assert ended.tags == {"team": "vision", "try": 2}
    assert ended.metrics == {"loss": 0.25, "acc": 0.8}
    assert ended.status is RunStatus.COMPLETED
    assert ended.ended_at is not None and ended.duration_s is not None and ended.duration_s >= 0
    assert store.get_run(run.run_id) == ended


def test_end_run_failed_keeps_error_and_given_time(store: SqlStore) -> None:
    run = _run(store)
    at = datetime(2030, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    ended = store.end_run(run.run_id, RunStatus.FAILED, error="NaN loss at step 7", ended_at=at)
    assert (ended.status, ended.error) == (RunStatus.FAILED, "NaN loss at step 7")
    assert ended.ended_at == at and ended.ended_at.tzinfo == timezone.utc
    assert store.get_run(run.run_id).ended_at == at


def test_concurrent_set_tags_lose_no_update(store: SqlStore) -> None:
    run = _run(store)
    _in_threads(8, lambda i: store.set_tags(run.run_id, {f"k{i}": i}))
    assert store.get_run(run.run_id).tags == {f"k{i}": i for i in range(8)}


def test_create_run_with_a_taken_id_conflicts(store: SqlStore) -> None:
    run = _run(store, run_id="my-run")
    assert run.run_id == "my-run"
    with pytest.raises(Conflict, match="run 'my-run' already exists"):
        _run(store, run_id="my-run")


def test_list_runs_filters_orders_and_limits(store: SqlStore) -> None:
    a = [_run(store, "a") for _ in range(3)]
    b = [_run(store, "b") for _ in range(2)]
    store.end_run(a[0].run_id, RunStatus.COMPLETED)
    exp_a = store.get_or_create_experiment("a").experiment_id

    assert [r.run_id for r in store.list_runs()] == [r.run_id for r in reversed(a + b)]
    assert [r.run_id for r in store.list_runs(exp_a)] == [r.run_id for r in reversed(a)]
    assert [r.run_id for r in store.list_runs(status=RunStatus.COMPLETED)] == [a[0].run_id]
    running = store.list_runs(exp_a, status=RunStatus.RUNNING)
    assert [r.run_id for r in running] == [a[2].run_id, a[1].run_id]
    assert [r.run_id for r in store.list_runs(limit=2)] == [b[1].run_id, b[0].run_id]


def test_nested_json_round_trips(store: SqlStore) -> None:
    params = {"model": {"layers": [64, 32], "act": "relu", "dropout": None},
              "optim": {"lr": 1e-3, "betas": [0.9, 0.999]}, "flags": [True, False], "name": "é"}
    experiment_id = store.get_or_create_experiment("json").experiment_id
    run = store.create_run(experiment_id, params, {"gpus": [{"name": "A100"}]}, "file:///x")
    stored = store.get_run(run.run_id)
    assert stored.params == params
    assert stored.environment == {"gpus": [{"name": "A100"}]}


def test_datetimes_are_timezone_aware_utc(store: SqlStore) -> None:
    before = datetime.now(timezone.utc)
    run = store.end_run(_run(store).run_id, RunStatus.COMPLETED)
    model = store.create_model_version("m", run.run_id, "file:///m", ModelStage.NONE, {})
    stored = store.get_run(run.run_id)
    for moment in [stored.started_at, stored.ended_at, model.created_at]:
        assert moment is not None and moment.tzinfo == timezone.utc
        assert before <= moment <= datetime.now(timezone.utc)


def test_set_data_version_links_a_stored_version(store: SqlStore) -> None:
    run = _run(store)
    store.put_data_version(DataVersion("d1", "file:///data", (), 0))
    store.set_data_version(run.run_id, "d1")
    assert store.get_run(run.run_id).data_version_id == "d1"
    with pytest.raises(NotFound, match="data version 'd2' not found"):
        store.set_data_version(run.run_id, "d2")


# metric series


def test_ten_thousand_points_round_trip_exactly_in_order(store: SqlStore) -> None:
    run = _run(store)
    rng = random.Random(0)
    points = [MetricPoint("loss", rng.random() * 10 ** rng.randint(-30, 30), step, 1e9 + step / 7)
              for step in range(10_000)]
    shuffled = rng.sample(points, len(points))
    store.log_metrics(run.run_id, shuffled)
    assert store.get_metric_history(run.run_id, "loss") == points


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
    assert len(store.get_metric_history(run.run_id, "x")) == 5500


def test_history_orders_by_step_then_timestamp_per_key(store: SqlStore) -> None:
    run = _run(store)
    store.log_metrics(run.run_id, [
        MetricPoint("acc", 0.5, 2, 20.0), MetricPoint("acc", 0.4, 1, 30.0),
        MetricPoint("acc", 0.3, 1, 10.0), MetricPoint("loss", 1.0, 0, 0.0),
    ])
    store.log_metrics(run.run_id, [])
    history = store.get_metric_history(run.run_id, "acc")
    assert [(p.step, p.timestamp, p.value) for p in history] == [
        (1, 10.0, 0.3), (1, 30.0, 0.4), (2, 20.0, 0.5)
    ]
    assert store.metric_keys(run.run_id) == ["acc", "loss"]
    assert store.get_metric_history(run.run_id, "nope") == []


def test_nan_and_infinite_values_round_trip(store: SqlStore) -> None:
    run = _run(store)
    values = [math.nan, math.inf, -math.inf]
    store.log_metrics(run.run_id, [MetricPoint("v", v, i, 0.0) for i, v in enumerate(values)])
    got = [p.value for p in store.get_metric_history(run.run_id, "v")]
    assert math.isnan(got[0]) and got[1:] == [math.inf, -math.inf]


# data versions


def test_data_version_round_trips_and_is_content_addressed(store: SqlStore) -> None:
    files = ({"path": "a.csv", "sha256": "f" * 64, "size": 10}, {"path": "b.csv", "size": 3})
    version = DataVersion("d" * 64, "s3://bucket/raw", files, 13)
    stored = store.put_data_version(version)
    assert (stored.data_version_id, stored.source, stored.files, stored.num_rows) == (
        version.data_version_id, version.source, files, 13
    )
    assert stored.created_at is not None and stored.created_at.tzinfo == timezone.utc
    assert store.put_data_version(DataVersion("d" * 64, "elsewhere", (), 0)) == stored
    assert store.get_data_version("d" * 64) == stored


# model registry


def test_model_versions_are_numbered_per_model(store: SqlStore) -> None:
    run = _run(store)
    made = [store.create_model_version(name, run.run_id, f"file:///{name}", ModelStage.NONE, {})
            for name in ["a", "a", "b", "a"]]
    assert [(m.model_name, m.version) for m in made] == [("a", "1"), ("a", "2"), ("b", "1"),
                                                         ("a", "3")]
    assert store.get_model_version("a", "2") == made[1]
    assert store.list_model_versions("b") == [made[2]]
    assert [m.version for m in store.list_model_versions()] == ["1", "2", "3", "1"]


def test_model_version_keeps_its_fields_and_sorts_numerically(store: SqlStore) -> None:
    run = _run(store)
    store.put_data_version(DataVersion("d1", "file:///data", (), 1))
    for _ in range(10):
        store.create_model_version("m", run.run_id, "file:///m", ModelStage.NONE, {})
    last = store.create_model_version("m", run.run_id, "file:///m11", ModelStage.STAGING,
                                      {"acc": 0.9}, data_version_id="d1", git_commit="abc")
    assert (last.version, last.stage, last.metrics) == ("11", ModelStage.STAGING, {"acc": 0.9})
    assert (last.data_version_id, last.git_commit, last.run_id) == ("d1", "abc", run.run_id)
    assert [m.version for m in store.list_model_versions("m")] == [str(i) for i in range(1, 12)]


def test_concurrent_registrations_get_distinct_versions(store: SqlStore) -> None:
    run = _run(store)
    versions = _in_threads(
        8, lambda _: store.create_model_version("m", run.run_id, "u", ModelStage.NONE, {}).version
    )
    assert sorted(versions, key=int) == [str(i) for i in range(1, 9)]


# missing ids


RUN_MISSING = f"run '{MISSING}' not found"
NOT_FOUND_CASES = {
    "get_experiment": (lambda s: s.get_experiment(MISSING), f"experiment '{MISSING}' not found"),
    "get_run": (lambda s: s.get_run(MISSING), RUN_MISSING),
    "set_tags": (lambda s: s.set_tags(MISSING, {}), RUN_MISSING),
    "set_summary_metrics": (lambda s: s.set_summary_metrics(MISSING, {}), RUN_MISSING),
    "end_run": (lambda s: s.end_run(MISSING, RunStatus.FAILED), RUN_MISSING),
    "log_metrics": (lambda s: s.log_metrics(MISSING, [MetricPoint("k", 1.0, 0, 0.0)]), RUN_MISSING),
    "get_metric_history": (lambda s: s.get_metric_history(MISSING, "k"), RUN_MISSING),
    "metric_keys": (lambda s: s.metric_keys(MISSING), RUN_MISSING),
    "get_data_version": (lambda s: s.get_data_version(MISSING),
                         f"data version '{MISSING}' not found"),
    "get_model_version": (lambda s: s.get_model_version("m", "1"),
                          "model 'm' version '1' not found"),
    "create_run": (lambda s: s.create_run(MISSING, {}, {}, "u"),
                   f"experiment '{MISSING}' not found"),
    "create_model_version": (
        lambda s: s.create_model_version("m", MISSING, "u", ModelStage.NONE, {}), RUN_MISSING
    ),
}


@pytest.mark.parametrize(("call", "message"), NOT_FOUND_CASES.values(), ids=NOT_FOUND_CASES.keys())
def test_missing_ids_raise_not_found_naming_them(
    store: SqlStore, call: Callable[[SqlStore], Any], message: str
) -> None:
    with pytest.raises(NotFound) as raised:
        call(store)
    assert str(raised.value) == message


def test_create_run_with_a_missing_pipeline_raises_not_found(store: SqlStore) -> None:
    with pytest.raises(NotFound, match="pipeline 'nope' not found"):
        _run(store, pipeline_id="nope")


# opening


@pytest.mark.parametrize("url", ["mysql://root:secret@localhost/db", "not a url"])
def test_unusable_url_is_refused_naming_what_is_expected(url: str) -> None:
    with pytest.raises(StoreError, match="expected sqlite:///") as raised:
        SqlStore(url)
    assert "secret" not in str(raised.value)


def test_non_finite_summary_metrics_round_trip_and_model_metrics_as_nan(store: SqlStore) -> None:
    experiment = store.get_or_create_experiment("nan")
    run = store.create_run(experiment.experiment_id, {}, {}, "file:///a")
    store.set_summary_metrics(run.run_id, {"test_roc_auc": float("nan"), "loss": float("inf"),
                                           "ok": 0.5})
    metrics = store.get_run(run.run_id).metrics
    assert math.isnan(metrics["test_roc_auc"]) and metrics["loss"] == math.inf
    assert metrics["ok"] == 0.5
    version = store.create_model_version("m", run.run_id, "file:///a/model", ModelStage.STAGING,
                                         {"test_roc_auc": float("nan")})
    assert math.isnan(store.get_model_version("m", version.version).metrics["test_roc_auc"])
