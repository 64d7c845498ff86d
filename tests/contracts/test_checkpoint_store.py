"""`CheckpointStore`: records keyed by (run, step), deletions recorded, records in pages."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from datetime import timezone
from typing import Any

import pytest
from contract_helpers import MISSING, RUN_MISSING, pages

import trainforge
from trainforge.entities import CheckpointRecord
from trainforge.errors import NotFound
from trainforge.storage import CheckpointStore, Store


def test_a_recorded_checkpoint_is_listed_as_returned(checkpoints: CheckpointStore,
                                                     run_id: str) -> None:
    record = checkpoints.record_checkpoint(run_id, 100, "file:///ckpt/step-100", epoch=2,
                                           metrics={"val_loss": 0.25})
    assert (record.run_id, record.step, record.uri, record.epoch, record.metrics) == (
        run_id, 100, "file:///ckpt/step-100", 2, {"val_loss": 0.25})
    assert (record.deleted, record.deleted_at) == (False, None)
    assert record.created_at.tzinfo == timezone.utc
    assert checkpoints.list_checkpoints(run_id).items == (record,)


def test_records_and_pages_are_frozen(checkpoints: CheckpointStore, run_id: str) -> None:
    assert trainforge.CheckpointRecord is CheckpointRecord
    record = checkpoints.record_checkpoint(run_id, 1, "u")
    page = checkpoints.list_checkpoints(run_id)
    with pytest.raises(FrozenInstanceError):
        record.step = 2  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        page.next_cursor = "x"  # type: ignore[misc]


def test_epoch_and_metrics_are_optional(checkpoints: CheckpointStore, run_id: str) -> None:
    record = checkpoints.record_checkpoint(run_id, 5, "file:///ckpt/5")
    assert (record.epoch, record.metrics) == (None, {})
    assert checkpoints.list_checkpoints(run_id).items == (record,)


def test_non_finite_checkpoint_metrics_read_back_as_nan(checkpoints: CheckpointStore,
                                                        run_id: str) -> None:
    checkpoints.record_checkpoint(run_id, 1, "u", metrics={"loss": math.nan, "grad": math.inf,
                                                           "acc": 0.5})
    [stored] = checkpoints.list_checkpoints(run_id).items
    assert stored.metrics["acc"] == 0.5
    assert math.isnan(stored.metrics["loss"]) and math.isnan(stored.metrics["grad"])


def test_checkpoints_are_listed_by_step_and_only_the_runs_own(
    checkpoints: CheckpointStore, store: Store, run_id: str, experiment_id: str
) -> None:
    other, empty = (store.create_run(experiment_id, {}, {}, "u").run_id for _ in range(2))
    for step in [30, 10, 20]:
        checkpoints.record_checkpoint(run_id, step, f"file:///ckpt/{step}")
    checkpoints.record_checkpoint(other, 15, "file:///other/15")
    assert [c.step for c in checkpoints.list_checkpoints(run_id).items] == [10, 20, 30]
    assert [c.uri for c in checkpoints.list_checkpoints(other).items] == ["file:///other/15"]
    assert checkpoints.list_checkpoints(empty).items == ()


def test_deleted_checkpoints_are_listed_only_when_asked(checkpoints: CheckpointStore,
                                                        run_id: str) -> None:
    for step in [1, 2, 3]:
        checkpoints.record_checkpoint(run_id, step, f"u{step}")
    checkpoints.mark_checkpoint_deleted(run_id, 2)
    assert [c.step for c in checkpoints.list_checkpoints(run_id).items] == [1, 3]
    listed = checkpoints.list_checkpoints(run_id, include_deleted=True).items
    assert [(c.step, c.deleted) for c in listed] == [(1, False), (2, True), (3, False)]
    deleted_at = listed[1].deleted_at
    assert deleted_at is not None and deleted_at.tzinfo == timezone.utc
    assert deleted_at >= listed[1].created_at


def test_marking_a_checkpoint_deleted_again_keeps_the_first_time(
    checkpoints: CheckpointStore, run_id: str
) -> None:
    checkpoints.record_checkpoint(run_id, 1, "u")
    checkpoints.mark_checkpoint_deleted(run_id, 1)
    first = checkpoints.list_checkpoints(run_id, include_deleted=True).items
    checkpoints.mark_checkpoint_deleted(run_id, 1)
    assert checkpoints.list_checkpoints(run_id, include_deleted=True).items == first


def test_recording_a_step_again_overwrites_it_and_undeletes_it(
    checkpoints: CheckpointStore, run_id: str
) -> None:
    first = checkpoints.record_checkpoint(run_id, 50, "file:///attempt-1/50", epoch=1,
                                          metrics={"loss": 0.4})
    checkpoints.mark_checkpoint_deleted(run_id, 50)
    again = checkpoints.record_checkpoint(run_id, 50, "file:///attempt-2/50")
    assert (again.uri, again.epoch, again.metrics, again.deleted) == (
        "file:///attempt-2/50", None, {}, False)
    assert again.created_at >= first.created_at
    assert checkpoints.list_checkpoints(run_id, include_deleted=True).items == (again,)


def test_checkpoints_come_in_pages_by_step(checkpoints: CheckpointStore, run_id: str) -> None:
    for step in [70, 10, 50, 20, 40, 30, 60]:
        checkpoints.record_checkpoint(run_id, step, f"u{step}")
    checkpoints.mark_checkpoint_deleted(run_id, 40)
    live = pages(lambda cursor: checkpoints.list_checkpoints(run_id, limit=2, cursor=cursor))
    assert [[c.step for c in page.items] for page in live] == [[10, 20], [30, 50], [60, 70]]
    every = pages(lambda cursor: checkpoints.list_checkpoints(run_id, True, 4, cursor))
    assert [[c.step for c in page.items] for page in every] == [[10, 20, 30, 40],
                                                                [50, 60, 70]]
    with pytest.raises(ValueError, match="with other arguments"):
        checkpoints.list_checkpoints(run_id, cursor=every[0].next_cursor)


NOT_FOUND_CASES: dict[str, Callable[[CheckpointStore], Any]] = {
    "record_checkpoint": lambda s: s.record_checkpoint(MISSING, 1, "u"),
    "list_checkpoints": lambda s: s.list_checkpoints(MISSING),
    "mark_checkpoint_deleted": lambda s: s.mark_checkpoint_deleted(MISSING, 1),
}


@pytest.mark.parametrize("call", NOT_FOUND_CASES.values(), ids=NOT_FOUND_CASES.keys())
def test_a_missing_run_raises_not_found_naming_it(
    checkpoints: CheckpointStore, call: Callable[[CheckpointStore], Any]
) -> None:
    with pytest.raises(NotFound) as raised:
        call(checkpoints)
    assert str(raised.value) == RUN_MISSING


def test_marking_a_step_without_a_checkpoint_raises_not_found(
    checkpoints: CheckpointStore, run_id: str
) -> None:
    checkpoints.record_checkpoint(run_id, 10, "u")
    with pytest.raises(NotFound) as raised:
        checkpoints.mark_checkpoint_deleted(run_id, 11)
    assert str(raised.value) == f"run {run_id!r} has no checkpoint at step 11"
