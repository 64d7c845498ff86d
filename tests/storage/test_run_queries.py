"""Store contract, continued: latest values, idempotent batches, search, downsampling,
heartbeats. Runs on every backend (the `store` fixture)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from trainforge.entities import MetricPoint, Run, RunStatus
from trainforge.errors import NotFound, QueryError
from trainforge.storage import SqlStore


def _run(store: SqlStore, experiment: str = "exp", params: dict[str, Any] | None = None,
         **kwargs: Any) -> Run:
    experiment_id = store.get_or_create_experiment(experiment).experiment_id
    return store.create_run(experiment_id, params or {}, {}, "file:///a", **kwargs)


def _ids(runs: list[Run]) -> list[str]:
    return [r.run_id for r in runs]


def test_latest_value_is_the_last_step_unless_a_summary_is_set(store: SqlStore) -> None:
    run = _run(store)
    store.log_metrics(run.run_id, [MetricPoint("loss", 0.5, 2, 20.0),
                                   MetricPoint("loss", 0.9, 1, 30.0)])
    store.log_metrics(run.run_id, [MetricPoint("loss", 0.7, 1, 40.0),  # older step: ignored
                                   MetricPoint("acc", math.nan, 0, 0.0)])
    metrics = store.get_run(run.run_id).metrics
    assert metrics["loss"] == 0.5 and math.isnan(metrics["acc"])
    store.set_summary_metrics(run.run_id, {"loss": 0.1})
    store.log_metrics(run.run_id, [MetricPoint("loss", 0.05, 99, 50.0)])
    assert store.get_run(run.run_id).metrics["loss"] == 0.1
    assert len(store.get_metric_history(run.run_id, "loss")) == 4


def test_a_batch_id_is_stored_once(store: SqlStore) -> None:
    run = _run(store)
    points = [MetricPoint("x", float(i), i, 0.0) for i in range(10)]
    assert store.log_metrics(run.run_id, points, batch_id="b1") is True
    assert store.log_metrics(run.run_id, points, batch_id="b1") is False
    assert store.log_metrics(run.run_id, points[:3], batch_id="b2") is True
    assert len(store.get_metric_history(run.run_id, "x")) == 13
    other = _run(store)
    assert store.log_metrics(other.run_id, points, batch_id="b1") is True  # ids are per run


def test_log_params_merges_top_level_keys(store: SqlStore) -> None:
    run = _run(store, params={"a": 1, "b": {"c": 2}})
    store.log_params(run.run_id, {"b": {"d": 3}, "e": [1]})
    assert store.get_run(run.run_id).params == {"a": 1, "b": {"d": 3}, "e": [1]}
    with pytest.raises(NotFound):
        store.log_params("missing", {})


@pytest.fixture
def population(store: SqlStore) -> list[Run]:
    """Six runs in two experiments with metrics, nested params and tags."""
    specs = [
        ("fraud", 0.95, 1e-4, "adamw", "risk"), ("fraud", 0.91, 1e-2, "sgd", "risk"),
        ("fraud", 0.80, 5e-4, "adamw", "growth"), ("fraud", None, 1e-4, "adamw", None),
        ("churn", 0.99, 1e-4, "adamw", "risk"), ("churn", math.nan, "auto", "adamw", "risk"),
    ]
    runs = []
    for experiment, auc, lr, optimizer, team in specs:
        run = _run(store, experiment, {"training": {"optimizer": {"lr": lr, "name": optimizer}}},
                   tags={"team": team} if team else {})
        if auc is not None:
            store.set_summary_metrics(run.run_id, {"test_auc": auc})
        runs.append(run)
    store.end_run(runs[0].run_id, RunStatus.COMPLETED)
    return runs


def test_filters_on_metrics_params_tags_and_attributes(store: SqlStore, population) -> None:
    r = population
    fraud = store.get_or_create_experiment("fraud").experiment_id
    search = store.search_runs
    assert set(_ids(search(filter="metrics.test_auc > 0.9"))) == {r[0].run_id, r[1].run_id,
                                                                 r[4].run_id}
    assert set(_ids(search([fraud], "metrics.test_auc > 0.9 and "
                                    "params.training.optimizer.lr < 1e-3"))) == {r[0].run_id}
    assert set(_ids(search(filter="params.training.optimizer.name = 'sgd'"))) == {r[1].run_id}
    # a string param never matches a number and a number never matches a string
    assert set(_ids(search(filter="params.training.optimizer.lr = 'auto'"))) == {r[5].run_id}
    assert r[5].run_id not in _ids(search(filter="params.training.optimizer.lr < 1"))
    assert set(_ids(search(filter="tags.team = 'growth'"))) == {r[2].run_id}
    assert set(_ids(search(filter="tags.team != 'risk'"))) == {r[2].run_id}
    assert _ids(search(filter="status = 'completed'")) == [r[0].run_id]
    assert set(_ids(search(filter="experiment = 'churn'"))) == {r[4].run_id, r[5].run_id}
    assert search(filter="params.missing.path > 0") == []


def test_sorts_put_missing_values_last_and_break_ties_newest_first(store: SqlStore,
                                                                   population) -> None:
    r = population
    by_auc = _ids(store.search_runs(sort="-metrics.test_auc"))
    assert by_auc[:4] == [r[4].run_id, r[0].run_id, r[1].run_id, r[2].run_id]
    assert set(by_auc[4:]) == {r[3].run_id, r[5].run_id}  # no value, NaN
    assert _ids(store.search_runs(sort="metrics.test_auc", limit=2)) == [r[2].run_id, r[1].run_id]
    assert _ids(store.search_runs(sort="-metrics.test_auc", limit=2, offset=1)) == [
        r[0].run_id, r[1].run_id]
    by_lr = _ids(store.search_runs(sort="params.training.optimizer.lr,-metrics.test_auc"))
    assert by_lr[:3] == [r[4].run_id, r[0].run_id, r[3].run_id]  # 1e-4 ties by auc desc
    assert _ids(store.search_runs(sort="tags.team", limit=1)) == [r[2].run_id]  # 'growth'
    assert _ids(store.search_runs()) == _ids(store.list_runs()) == [x.run_id for x in r[::-1]]
    assert _ids(store.search_runs(sort="-started_at")) == [x.run_id for x in r[::-1]]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"filter": "metrics.auc >"}, QueryError),
    ({"sort": "-bogus"}, QueryError),
    ({"limit": 0}, ValueError),
    ({"offset": -1}, ValueError),
])
def test_bad_search_arguments_are_refused(store: SqlStore, kwargs, error) -> None:
    with pytest.raises(error):
        store.search_runs(**kwargs)


def test_downsampled_history_keeps_extremes_and_bounds_the_count(store: SqlStore) -> None:
    run = _run(store)
    values = [math.sin(step / 50) for step in range(5000)]
    values[1234], values[4321] = 100.0, -100.0  # single-step spikes
    store.log_metrics(run.run_id, [MetricPoint("loss", v, s, float(s))
                                   for s, v in enumerate(values)])
    sampled = store.get_metric_history(run.run_id, "loss", max_points=200)
    assert 100 <= len(sampled) <= 200
    steps = [p.step for p in sampled]
    assert steps == sorted(steps) and {1234, 4321} <= set(steps)
    assert max(p.value for p in sampled) == 100.0 and min(p.value for p in sampled) == -100.0
    # a short series comes back whole
    assert len(store.get_metric_history(run.run_id, "loss", max_points=5000)) == 5000
    with pytest.raises(ValueError, match="max_points must be >= 2"):
        store.get_metric_history(run.run_id, "loss", max_points=1)


def test_heartbeats_add_device_hours_and_stale_runs_are_crashed(store: SqlStore) -> None:
    stale, alive, done = _run(store), _run(store), _run(store)
    store.end_run(done.run_id, RunStatus.COMPLETED)
    store.heartbeat(alive.run_id, device_hours=0.25)
    store.heartbeat(alive.run_id, device_hours=0.5)
    assert store.get_run(alive.run_id).device_hours == 0.75
    cutoff = store.get_run(alive.run_id).heartbeat_at - timedelta(microseconds=1)
    crashed = store.mark_crashed(cutoff)
    assert _ids(crashed) == [stale.run_id]
    assert crashed[0].status is RunStatus.CRASHED and "no heartbeat since" in crashed[0].error
    assert crashed[0].ended_at == store.get_run(stale.run_id).heartbeat_at
    assert store.get_run(alive.run_id).status is RunStatus.RUNNING
    assert store.get_run(done.run_id).status is RunStatus.COMPLETED
    assert store.mark_crashed(cutoff) == []
    store.heartbeat(stale.run_id)  # it was alive after all
    revived = store.get_run(stale.run_id)
    assert (revived.status, revived.ended_at, revived.error) == (RunStatus.RUNNING, None, None)


def test_heartbeat_and_reopen_bad_inputs(store: SqlStore) -> None:
    with pytest.raises(NotFound, match="run 'missing' not found"):
        store.heartbeat("missing")
    with pytest.raises(ValueError, match="device_hours must be >= 0"):
        store.heartbeat(_run(store).run_id, -1.0)
    with pytest.raises(NotFound):
        store.reopen_run("missing")
    future = datetime.now(timezone.utc) + timedelta(days=1)
    assert len(store.mark_crashed(future)) == 1
