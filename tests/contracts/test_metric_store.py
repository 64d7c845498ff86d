"""`MetricStore`: series, latest and summary values, idempotent batches, downsampling, rewinding
a series to a checkpoint's step, and series in pages."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import pytest
from contract_helpers import MISSING, RUN_MISSING, log, pages

from trainforge.entities import MetricPoint
from trainforge.errors import NotFound
from trainforge.storage import MetricStore, Page, RunStore, Store, all_items


def _history(metrics: MetricStore, run_id: str, key: str) -> list[MetricPoint]:
    return all_items(lambda cursor: metrics.get_metric_history(run_id, key, cursor=cursor))


# series


def test_ten_thousand_points_round_trip_exactly_in_order(metrics: MetricStore,
                                                         run_id: str) -> None:
    rng = random.Random(0)
    points = [MetricPoint("loss", rng.random() * 10 ** rng.randint(-30, 30), step, 1e9 + step / 7)
              for step in range(10_000)]
    metrics.log_metrics(run_id, rng.sample(points, len(points)))
    page = metrics.get_metric_history(run_id, "loss")
    assert (list(page.items), page.next_cursor) == (points, None)  # the default limit: 10,000


def test_history_orders_by_step_then_timestamp_per_key(metrics: MetricStore, run_id: str) -> None:
    metrics.log_metrics(run_id, [
        MetricPoint("acc", 0.5, 2, 20.0), MetricPoint("acc", 0.4, 1, 30.0),
        MetricPoint("acc", 0.3, 1, 10.0), MetricPoint("loss", 1.0, 0, 0.0),
    ])
    metrics.log_metrics(run_id, [])
    history = metrics.get_metric_history(run_id, "acc").items
    assert [(p.step, p.timestamp, p.value) for p in history] == [
        (1, 10.0, 0.3), (1, 30.0, 0.4), (2, 20.0, 0.5)
    ]
    assert metrics.metric_keys(run_id).items == ("acc", "loss")
    assert metrics.get_metric_history(run_id, "nope").items == ()


def test_nan_and_infinite_values_round_trip(metrics: MetricStore, run_id: str) -> None:
    values = [math.nan, math.inf, -math.inf]
    metrics.log_metrics(run_id, [MetricPoint("v", v, i, 0.0) for i, v in enumerate(values)])
    got = [p.value for p in metrics.get_metric_history(run_id, "v").items]
    assert math.isnan(got[0]) and got[1:] == [math.inf, -math.inf]


def test_history_pages_keep_order_through_ties(metrics: MetricStore, run_id: str) -> None:
    # Equal steps and equal timestamps: only insertion order tells these points apart.
    points = [MetricPoint("loss", float(i), i // 4, float(i // 8)) for i in range(23)]
    for start in range(0, 23, 5):
        metrics.log_metrics(run_id, points[start:start + 5])
    for limit in [1, 3, 4, 23, 100]:
        def fetch(cursor: str | None, limit: int = limit) -> Page[MetricPoint]:
            return metrics.get_metric_history(run_id, "loss", limit=limit, cursor=cursor)

        walked = pages(fetch)
        assert [p for page in walked for p in page.items] == points
        assert len(walked) == math.ceil(23 / limit)


def test_points_logged_meanwhile_come_on_later_pages(metrics: MetricStore, run_id: str) -> None:
    log(metrics, run_id, "loss", list(range(6)))
    first = metrics.get_metric_history(run_id, "loss", limit=4)
    log(metrics, run_id, "loss", [6, 7])
    second = metrics.get_metric_history(run_id, "loss", limit=4, cursor=first.next_cursor)
    assert [p.step for p in first.items + second.items] == list(range(8))
    assert second.next_cursor is None


def test_metric_keys_come_in_pages_by_name(metrics: MetricStore, run_id: str) -> None:
    keys = ["val/auc", "loss", "lr", "acc", "grad_norm"]
    metrics.log_metrics(run_id, [MetricPoint(key, 1.0, step, 0.0) for key in keys
                                 for step in range(3)])
    walked = pages(lambda cursor: metrics.metric_keys(run_id, limit=2, cursor=cursor))
    assert [page.items for page in walked] == [("acc", "grad_norm"), ("loss", "lr"),
                                               ("val/auc",)]


# latest and summary values


def test_latest_value_is_the_last_step_unless_a_summary_is_set(
    metrics: MetricStore, runs: RunStore, run_id: str
) -> None:
    metrics.log_metrics(run_id, [MetricPoint("loss", 0.5, 2, 20.0),
                                 MetricPoint("loss", 0.9, 1, 30.0)])
    metrics.log_metrics(run_id, [MetricPoint("loss", 0.7, 1, 40.0),  # older step: ignored
                                 MetricPoint("acc", math.nan, 0, 0.0)])
    latest = runs.get_run(run_id).metrics
    assert latest["loss"] == 0.5 and math.isnan(latest["acc"])
    metrics.set_summary_metrics(run_id, {"loss": 0.1})
    metrics.log_metrics(run_id, [MetricPoint("loss", 0.05, 99, 50.0)])
    assert runs.get_run(run_id).metrics["loss"] == 0.1
    assert len(metrics.get_metric_history(run_id, "loss").items) == 4


def test_summary_metrics_merge_and_non_finite_values_round_trip(
    metrics: MetricStore, runs: RunStore, run_id: str
) -> None:
    metrics.set_summary_metrics(run_id, {"loss": 0.5, "acc": 0.8})
    metrics.set_summary_metrics(run_id, {"loss": 0.25})
    assert runs.get_run(run_id).metrics == {"loss": 0.25, "acc": 0.8}
    metrics.set_summary_metrics(run_id, {"test_roc_auc": math.nan, "loss": math.inf})
    latest = runs.get_run(run_id).metrics
    assert math.isnan(latest["test_roc_auc"]) and latest["loss"] == math.inf
    assert latest["acc"] == 0.8


def test_a_batch_id_is_stored_once_per_run(
    metrics: MetricStore, run_id: str, store: Store, experiment_id: str
) -> None:
    points = [MetricPoint("x", float(i), i, 0.0) for i in range(10)]
    assert metrics.log_metrics(run_id, points, batch_id="b1") is True
    assert metrics.log_metrics(run_id, points, batch_id="b1") is False
    assert metrics.log_metrics(run_id, points[:3], batch_id="b2") is True
    assert len(metrics.get_metric_history(run_id, "x").items) == 13
    other = store.create_run(experiment_id, {}, {}, "file:///b").run_id
    assert metrics.log_metrics(other, points, batch_id="b1") is True  # ids are per run


# downsampling


def test_downsampled_history_keeps_extremes_and_bounds_the_count(
    metrics: MetricStore, run_id: str
) -> None:
    values = [math.sin(step / 50) for step in range(5000)]
    values[1234], values[4321] = 100.0, -100.0  # single-step spikes
    metrics.log_metrics(run_id, [MetricPoint("loss", v, s, float(s))
                                 for s, v in enumerate(values)])
    sampled = metrics.get_metric_history(run_id, "loss", max_points=200)
    assert sampled.next_cursor is None
    assert 100 <= len(sampled.items) <= 200
    steps = [p.step for p in sampled.items]
    assert steps == sorted(steps) and {1234, 4321} <= set(steps)
    assert max(p.value for p in sampled.items) == 100.0
    assert min(p.value for p in sampled.items) == -100.0
    # a short series comes back whole, in one page whatever the limit
    whole = metrics.get_metric_history(run_id, "loss", max_points=5000, limit=10)
    assert (len(whole.items), whole.next_cursor) == (5000, None)


def test_bad_history_arguments_are_refused(metrics: MetricStore, run_id: str) -> None:
    log(metrics, run_id, "loss", [0, 1, 2])
    cursor = metrics.get_metric_history(run_id, "loss", limit=1).next_cursor
    with pytest.raises(ValueError, match="max_points must be >= 2"):
        metrics.get_metric_history(run_id, "loss", max_points=1)
    with pytest.raises(ValueError, match="a downsampled history comes whole"):
        metrics.get_metric_history(run_id, "loss", max_points=10, cursor=cursor)
    with pytest.raises(ValueError, match="with other arguments"):
        metrics.get_metric_history(run_id, "acc", limit=1, cursor=cursor)
    with pytest.raises(ValueError, match="limit must be an integer >= 1"):
        metrics.get_metric_history(run_id, "loss", limit=0)


# rewinding a series to the checkpoint a run resumes from


def test_delete_metrics_after_removes_exactly_the_points_above_the_step(
    metrics: MetricStore, run_id: str
) -> None:
    log(metrics, run_id, "loss", list(range(10)))
    log(metrics, run_id, "acc", [0, 5, 8], first=100.0)
    log(metrics, run_id, "lr", [7, 8], first=200.0)
    log(metrics, run_id, "early", [1], first=300.0)
    assert metrics.delete_metrics_after(run_id, 5) == 4 + 1 + 2
    assert [p.step for p in _history(metrics, run_id, "loss")] == [0, 1, 2, 3, 4, 5]
    assert [p.step for p in _history(metrics, run_id, "acc")] == [0, 5]
    assert _history(metrics, run_id, "lr") == []
    assert [p.step for p in _history(metrics, run_id, "early")] == [1]
    assert metrics.metric_keys(run_id).items == ("acc", "early", "loss")


def test_delete_metrics_after_of_some_series_leaves_the_others_whole(
    metrics: MetricStore, runs: RunStore, run_id: str
) -> None:
    log(metrics, run_id, "row_count", [0, 3], first=50.0)  # a step of the run before training
    log(metrics, run_id, "loss", [0, 1, 2, 3])
    log(metrics, run_id, "lr", [2, 3], first=200.0)

    assert metrics.delete_metrics_after(run_id, -1, keys=["loss", "lr", "absent"]) == 6

    assert [p.step for p in _history(metrics, run_id, "row_count")] == [0, 3]
    assert _history(metrics, run_id, "loss") == _history(metrics, run_id, "lr") == []
    assert runs.get_run(run_id).metrics == {"row_count": 53.0}


def test_latest_values_go_back_to_the_last_point_left(
    metrics: MetricStore, runs: RunStore, run_id: str
) -> None:
    log(metrics, run_id, "loss", list(range(10)))
    log(metrics, run_id, "acc", [0, 5, 8], first=100.0)
    log(metrics, run_id, "lr", [7, 8], first=200.0)
    log(metrics, run_id, "early", [1], first=300.0)
    log(metrics, run_id, "val_auc", [2, 9], first=400.0)
    metrics.set_summary_metrics(run_id, {"val_auc": 0.95, "test_auc": 0.9})
    metrics.delete_metrics_after(run_id, 5)
    assert runs.get_run(run_id).metrics == {
        "loss": 5.0, "acc": 105.0, "early": 301.0, "val_auc": 0.95, "test_auc": 0.9}
    assert [p.step for p in _history(metrics, run_id, "val_auc")] == [2]


def test_the_last_point_left_is_the_latest_timestamp_of_the_highest_step(
    metrics: MetricStore, runs: RunStore, run_id: str
) -> None:
    metrics.log_metrics(run_id, [MetricPoint("loss", 0.7, 3, 20.0),
                                 MetricPoint("loss", 0.1, 9, 30.0)])
    # logged later, but earlier in time than the point above at the same step
    metrics.log_metrics(run_id, [MetricPoint("loss", 0.5, 3, 10.0),
                                 MetricPoint("loss", 0.9, 2, 40.0)])
    metrics.delete_metrics_after(run_id, 3)
    assert runs.get_run(run_id).metrics == {"loss": 0.7}


def test_a_nan_last_point_left_reads_back_as_nan(
    metrics: MetricStore, runs: RunStore, run_id: str
) -> None:
    metrics.log_metrics(run_id, [MetricPoint("loss", math.nan, 1, 1.0),
                                 MetricPoint("loss", 0.3, 2, 2.0)])
    metrics.delete_metrics_after(run_id, 1)
    assert math.isnan(runs.get_run(run_id).metrics["loss"])


def test_delete_metrics_after_leaves_other_runs_and_lower_steps_alone(
    metrics: MetricStore, runs: RunStore, run_id: str, store: Store, experiment_id: str
) -> None:
    other = store.create_run(experiment_id, {}, {}, "file:///b").run_id
    log(metrics, run_id, "loss", [0, 1, 2])
    log(metrics, other, "loss", [0, 1, 2, 3])
    assert metrics.delete_metrics_after(run_id, 2) == 0
    assert metrics.delete_metrics_after(run_id, 0) == 2
    assert runs.get_run(run_id).metrics == {"loss": 0.0}
    assert runs.get_run(other).metrics == {"loss": 3.0}
    assert [p.step for p in _history(metrics, other, "loss")] == [0, 1, 2, 3]


def test_a_resumed_attempt_logs_on_from_the_checkpoint_step(
    metrics: MetricStore, runs: RunStore, run_id: str
) -> None:
    log(metrics, run_id, "loss", [0, 1, 2, 3, 4])  # the crashed attempt got to step 4
    metrics.delete_metrics_after(run_id, 2)  # it resumes from the checkpoint of step 2
    log(metrics, run_id, "loss", [3, 4], first=10.0)
    history = _history(metrics, run_id, "loss")
    assert [(p.step, p.value) for p in history] == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 13.0),
                                                    (4, 14.0)]
    assert runs.get_run(run_id).metrics == {"loss": 14.0}


# missing runs


NOT_FOUND_CASES: dict[str, Callable[[MetricStore], Any]] = {
    "log_metrics": lambda s: s.log_metrics(MISSING, [MetricPoint("k", 1.0, 0, 0.0)]),
    "set_summary_metrics": lambda s: s.set_summary_metrics(MISSING, {}),
    "get_metric_history": lambda s: s.get_metric_history(MISSING, "k"),
    "get_metric_history(max_points)": lambda s: s.get_metric_history(MISSING, "k", 10),
    "metric_keys": lambda s: s.metric_keys(MISSING),
    "delete_metrics_after": lambda s: s.delete_metrics_after(MISSING, 1),
}


@pytest.mark.parametrize("call", NOT_FOUND_CASES.values(), ids=NOT_FOUND_CASES.keys())
def test_a_missing_run_raises_not_found_naming_it(
    metrics: MetricStore, call: Callable[[MetricStore], Any]
) -> None:
    with pytest.raises(NotFound) as raised:
        call(metrics)
    assert str(raised.value) == RUN_MISSING
