"""Checkpoint records and rewinding metric series on resume, run on every backend (the `store`
fixture: SQLite, PostgreSQL)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from datetime import datetime, timezone
from typing import Any

import pytest

import trainforge
from trainforge.entities import CheckpointRecord, MetricPoint
from trainforge.errors import NotFound
from trainforge.storage import SqlStore

MISSING = "0" * 32


def _run_id(store: SqlStore, experiment: str = "exp") -> str:
    experiment_id = store.get_or_create_experiment(experiment).experiment_id
    return store.create_run(experiment_id, {}, {}, "file:///a").run_id


def _log(store: SqlStore, run_id: str, key: str, steps: list[int], first: float = 0.0) -> None:
    """Points of `key` at `steps`, each valued `first + step`, at timestamp 1000 + step."""
    store.log_metrics(run_id, [MetricPoint(key, first + s, s, 1000.0 + s) for s in steps])


# checkpoint records


def test_a_recorded_checkpoint_is_listed_as_returned(store: SqlStore) -> None:
    run_id = _run_id(store)
    record = store.record_checkpoint(run_id, 100, "file:///ckpt/step-100", epoch=2,
                                     metrics={"val_loss": 0.25})
    assert (record.run_id, record.step, record.uri, record.epoch, record.metrics) == (
        run_id, 100, "file:///ckpt/step-100", 2, {"val_loss": 0.25})
    assert (record.deleted, record.deleted_at) == (False, None)
    assert record.created_at.tzinfo == timezone.utc
    assert store.list_checkpoints(run_id) == [record]


def test_epoch_and_metrics_are_optional(store: SqlStore) -> None:
    run_id = _run_id(store)
    record = store.record_checkpoint(run_id, 5, "file:///ckpt/5")
    assert (record.epoch, record.metrics) == (None, {})
    assert store.list_checkpoints(run_id) == [record]


def test_non_finite_checkpoint_metrics_read_back_as_nan(store: SqlStore) -> None:
    run_id = _run_id(store)
    store.record_checkpoint(run_id, 1, "u", metrics={"loss": math.nan, "grad": math.inf,
                                                     "acc": 0.5})
    [stored] = store.list_checkpoints(run_id)
    assert stored.metrics["acc"] == 0.5
    assert math.isnan(stored.metrics["loss"]) and math.isnan(stored.metrics["grad"])


def test_checkpoints_are_listed_by_step_and_only_the_runs_own(store: SqlStore) -> None:
    run_id, other = _run_id(store), _run_id(store)
    for step in [30, 10, 20]:
        store.record_checkpoint(run_id, step, f"file:///ckpt/{step}")
    store.record_checkpoint(other, 15, "file:///other/15")
    assert [c.step for c in store.list_checkpoints(run_id)] == [10, 20, 30]
    assert [c.uri for c in store.list_checkpoints(other)] == ["file:///other/15"]
    assert store.list_checkpoints(_run_id(store)) == []


def test_deleted_checkpoints_are_listed_only_when_asked(store: SqlStore) -> None:
    run_id = _run_id(store)
    for step in [1, 2, 3]:
        store.record_checkpoint(run_id, step, f"u{step}")
    store.mark_checkpoint_deleted(run_id, 2)
    assert [c.step for c in store.list_checkpoints(run_id)] == [1, 3]
    listed = store.list_checkpoints(run_id, include_deleted=True)
    assert [(c.step, c.deleted) for c in listed] == [(1, False), (2, True), (3, False)]
    deleted_at = listed[1].deleted_at
    assert deleted_at is not None and deleted_at.tzinfo == timezone.utc
    assert deleted_at >= listed[1].created_at


def test_marking_a_checkpoint_deleted_again_keeps_the_first_time(store: SqlStore) -> None:
    run_id = _run_id(store)
    store.record_checkpoint(run_id, 1, "u")
    store.mark_checkpoint_deleted(run_id, 1)
    [first] = store.list_checkpoints(run_id, include_deleted=True)
    store.mark_checkpoint_deleted(run_id, 1)
    assert store.list_checkpoints(run_id, include_deleted=True) == [first]


def test_recording_a_step_again_overwrites_it_and_undeletes_it(store: SqlStore) -> None:
    run_id = _run_id(store)
    first = store.record_checkpoint(run_id, 50, "file:///attempt-1/50", epoch=1,
                                    metrics={"loss": 0.4})
    store.mark_checkpoint_deleted(run_id, 50)
    again = store.record_checkpoint(run_id, 50, "file:///attempt-2/50")
    assert (again.uri, again.epoch, again.metrics, again.deleted) == (
        "file:///attempt-2/50", None, {}, False)
    assert again.created_at >= first.created_at
    assert store.list_checkpoints(run_id, include_deleted=True) == [again]


RUN_MISSING = f"run '{MISSING}' not found"
NOT_FOUND_CASES: dict[str, tuple[Callable[[SqlStore], Any], str]] = {
    "record_checkpoint": (lambda s: s.record_checkpoint(MISSING, 1, "u"), RUN_MISSING),
    "list_checkpoints": (lambda s: s.list_checkpoints(MISSING), RUN_MISSING),
    "mark_checkpoint_deleted": (lambda s: s.mark_checkpoint_deleted(MISSING, 1), RUN_MISSING),
    "delete_metrics_after": (lambda s: s.delete_metrics_after(MISSING, 1), RUN_MISSING),
}


@pytest.mark.parametrize(("call", "message"), NOT_FOUND_CASES.values(), ids=NOT_FOUND_CASES.keys())
def test_a_missing_run_raises_not_found_naming_it(
    store: SqlStore, call: Callable[[SqlStore], Any], message: str
) -> None:
    with pytest.raises(NotFound) as raised:
        call(store)
    assert str(raised.value) == message


def test_marking_a_step_without_a_checkpoint_raises_not_found(store: SqlStore) -> None:
    run_id = _run_id(store)
    store.record_checkpoint(run_id, 10, "u")
    with pytest.raises(NotFound) as raised:
        store.mark_checkpoint_deleted(run_id, 11)
    assert str(raised.value) == f"run {run_id!r} has no checkpoint at step 11"


def test_checkpoint_record_is_frozen_and_exported() -> None:
    assert trainforge.CheckpointRecord is CheckpointRecord
    record = CheckpointRecord("r", 1, "u", None, {}, datetime.now(timezone.utc))
    with pytest.raises(FrozenInstanceError):
        record.step = 2  # type: ignore[misc]


# rewinding metric series on resume


def test_delete_metrics_after_removes_exactly_the_points_above_the_step(store: SqlStore) -> None:
    run_id = _run_id(store)
    _log(store, run_id, "loss", list(range(10)))
    _log(store, run_id, "acc", [0, 5, 8], first=100.0)
    _log(store, run_id, "lr", [7, 8], first=200.0)
    _log(store, run_id, "early", [1], first=300.0)
    assert store.delete_metrics_after(run_id, 5) == 4 + 1 + 2
    assert [p.step for p in store.get_metric_history(run_id, "loss")] == [0, 1, 2, 3, 4, 5]
    assert [p.step for p in store.get_metric_history(run_id, "acc")] == [0, 5]
    assert store.get_metric_history(run_id, "lr") == []
    assert [p.step for p in store.get_metric_history(run_id, "early")] == [1]
    assert store.metric_keys(run_id) == ["acc", "early", "loss"]


def test_latest_values_go_back_to_the_last_point_left(store: SqlStore) -> None:
    run_id = _run_id(store)
    _log(store, run_id, "loss", list(range(10)))
    _log(store, run_id, "acc", [0, 5, 8], first=100.0)
    _log(store, run_id, "lr", [7, 8], first=200.0)
    _log(store, run_id, "early", [1], first=300.0)
    _log(store, run_id, "val_auc", [2, 9], first=400.0)
    store.set_summary_metrics(run_id, {"val_auc": 0.95, "test_auc": 0.9})
    store.delete_metrics_after(run_id, 5)
    assert store.get_run(run_id).metrics == {
        "loss": 5.0, "acc": 105.0, "early": 301.0, "val_auc": 0.95, "test_auc": 0.9}
    assert [p.step for p in store.get_metric_history(run_id, "val_auc")] == [2]


def test_the_last_point_left_is_the_latest_timestamp_of_the_highest_step(
    store: SqlStore
) -> None:
    run_id = _run_id(store)
    store.log_metrics(run_id, [MetricPoint("loss", 0.7, 3, 20.0),
                               MetricPoint("loss", 0.1, 9, 30.0)])
    # logged later, but earlier in time than the point above at the same step
    store.log_metrics(run_id, [MetricPoint("loss", 0.5, 3, 10.0),
                               MetricPoint("loss", 0.9, 2, 40.0)])
    store.delete_metrics_after(run_id, 3)
    assert store.get_run(run_id).metrics == {"loss": 0.7}


def test_a_nan_last_point_left_reads_back_as_nan(store: SqlStore) -> None:
    run_id = _run_id(store)
    store.log_metrics(run_id, [MetricPoint("loss", math.nan, 1, 1.0),
                               MetricPoint("loss", 0.3, 2, 2.0)])
    store.delete_metrics_after(run_id, 1)
    assert math.isnan(store.get_run(run_id).metrics["loss"])


def test_delete_metrics_after_leaves_other_runs_and_lower_steps_alone(store: SqlStore) -> None:
    run_id, other = _run_id(store), _run_id(store)
    _log(store, run_id, "loss", [0, 1, 2])
    _log(store, other, "loss", [0, 1, 2, 3])
    assert store.delete_metrics_after(run_id, 2) == 0
    assert store.delete_metrics_after(run_id, 0) == 2
    assert store.get_run(run_id).metrics == {"loss": 0.0}
    assert store.get_run(other).metrics == {"loss": 3.0}
    assert [p.step for p in store.get_metric_history(other, "loss")] == [0, 1, 2, 3]


def test_a_resumed_attempt_logs_on_from_the_checkpoint_step(store: SqlStore) -> None:
    run_id = _run_id(store)
    _log(store, run_id, "loss", [0, 1, 2, 3, 4])  # the crashed attempt got to step 4
    store.record_checkpoint(run_id, 2, "file:///ckpt/2")
    [checkpoint] = store.list_checkpoints(run_id)
    store.delete_metrics_after(run_id, checkpoint.step)
    _log(store, run_id, "loss", [3, 4], first=10.0)
    history = store.get_metric_history(run_id, "loss")
    assert [(p.step, p.value) for p in history] == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 13.0),
                                                    (4, 14.0)]
    assert store.get_run(run_id).metrics == {"loss": 14.0}
