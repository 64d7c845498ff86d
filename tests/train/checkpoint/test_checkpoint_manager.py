"""The manager: save policy, retention and gc, asynchronous saves, callbacks and errors."""

from __future__ import annotations

import doctest
import threading
import time
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

import trainforge.train.checkpoint as checkpoint
from trainforge.config import CheckpointSpec
from trainforge.errors import CheckpointError
from trainforge.train.checkpoint import (
    CheckpointInfo,
    CheckpointManager,
    CheckpointWarning,
    _manager,
    _rng,
    is_due,
    select_deletions,
)


def test_public_api() -> None:
    assert checkpoint.__all__ == [
        "CheckpointInfo",
        "CheckpointManager",
        "CheckpointWarning",
        "capture_rng_state",
        "is_due",
        "restore_rng_state",
        "select_deletions",
    ]


@pytest.mark.parametrize("module", [_manager, _rng])
def test_docstring_examples_run(module) -> None:
    assert doctest.testmod(module).failed == 0


def test_keep_best_needs_a_monitor() -> None:
    with pytest.raises(ValidationError, match="keep_best needs monitor"):
        CheckpointSpec(keep_best=1)


# -- decisions (pure) ------------------------------------------------------------------------


def due_steps(policy: CheckpointSpec, steps: range, seconds_per_step: float = 1.0) -> list[int]:
    saved, last_step, last_elapsed = [], None, 0.0
    for step in steps:
        elapsed = step * seconds_per_step
        if is_due(policy, step=step, elapsed=elapsed, epoch_end=step % 10 == 0,
                  last_step=last_step, last_elapsed=last_elapsed):  # fmt: skip
            saved.append(step)
            last_step, last_elapsed = step, elapsed
    return saved


def test_due_every_n_steps_and_at_epoch_end_once_per_step() -> None:
    policy = CheckpointSpec(every_n_steps=4)
    assert due_steps(policy, range(1, 21)) == [4, 8, 10, 12, 16, 20]
    no_epoch_end = CheckpointSpec(every_n_steps=4, at_epoch_end=False)
    assert due_steps(no_epoch_end, range(1, 13)) == [4, 8, 12]


def test_due_every_n_minutes_counts_from_the_last_save() -> None:
    policy = CheckpointSpec(every_n_minutes=0.5, at_epoch_end=False)
    assert due_steps(policy, range(1, 50), seconds_per_step=7.0) == list(range(5, 50, 5))


def infos(metrics: dict[int, float | None]) -> list[CheckpointInfo]:
    return [CheckpointInfo(step, f"/c/{step}", metrics={"loss": m}) for step, m in metrics.items()]


def deleted_steps(checkpoints, **kwargs) -> list[int]:
    kwargs = {"keep_best": 0, "monitor": "loss", "mode": "min", **kwargs}
    return [c.step for c in select_deletions(checkpoints, **kwargs)]


def test_retention_keeps_the_last_and_the_best() -> None:
    checkpoints = infos({1: 0.9, 2: 0.2, 3: 0.5, 4: 0.4, 5: 0.6, 6: 0.7})
    assert deleted_steps(checkpoints, keep_last=2) == [1, 2, 3, 4]
    assert deleted_steps(checkpoints, keep_last=2, keep_best=1) == [1, 3, 4]
    assert deleted_steps(checkpoints, keep_last=1, keep_best=2) == [1, 3, 5]
    assert deleted_steps(checkpoints, keep_last=1, keep_best=1, mode="max") == [2, 3, 4, 5]
    assert deleted_steps(checkpoints, keep_last=None, keep_best=1) == []
    assert deleted_steps(checkpoints, keep_last=10) == []


def test_retention_ignores_missing_metrics_and_prefers_newer_ties() -> None:
    checkpoints = infos({1: 0.1, 2: None, 3: 0.1, 4: 0.5})
    assert deleted_steps(checkpoints, keep_last=1, keep_best=1) == [1, 2]


def test_keep_best_without_monitor_is_an_error() -> None:
    with pytest.raises(CheckpointError, match="monitor"):
        select_deletions(infos({1: 0.1}), keep_last=1, keep_best=1, monitor=None, mode="min")


# -- the manager -----------------------------------------------------------------------------


def state_at(step: int) -> dict:
    return {"w": torch.full((8,), float(step)), "trainer": {"global_step": step}}


def steps(manager: CheckpointManager) -> list[int]:
    return [c.step for c in manager.list()]


def test_maybe_save_follows_the_policy_and_calls_state_fn_only_when_due(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path, CheckpointSpec(every_n_steps=2, keep_last=None))
    calls = []

    def state_fn() -> dict:
        calls.append(step)
        return state_at(step)

    for step in range(1, 8):
        metrics = {"loss": 1.0 / step}
        manager.maybe_save(step, 0, float(step), state_fn, metrics, epoch_end=step == 7)
    manager.wait()
    assert calls == [2, 4, 6, 7] and steps(manager) == [2, 4, 6, 7]
    assert manager.latest().metrics == {"loss": 1.0 / 7} and manager.latest().epoch == 0


def test_retention_after_each_save_never_deletes_the_best(tmp_path: Path) -> None:
    policy = CheckpointSpec(keep_last=2, keep_best=1, monitor="val_loss")
    deleted: list[int] = []
    manager = CheckpointManager(tmp_path, policy, on_deleted=lambda i: deleted.append(i.step))
    for step, loss in enumerate([0.5, 0.1, 0.4, 0.3, 0.35, 0.2], start=1):
        manager.save(step, state_at(step), metrics={"val_loss": loss})
    manager.wait()
    assert steps(manager) == [2, 5, 6] and deleted == [1, 3, 4]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "step-0000000002", "step-0000000005", "step-0000000006"
    ]  # fmt: skip


def test_gc_tightens_retention(tmp_path: Path) -> None:
    policy = CheckpointSpec(keep_last=None, monitor="loss", mode="max")
    manager = CheckpointManager(tmp_path, policy)
    for step, score in enumerate([0.5, 0.9, 0.4, 0.3], start=1):
        manager.save(step, state_at(step), metrics={"loss": score}, blocking=True)
    assert [c.step for c in manager.gc(keep_last=1, keep_best=1)] == [1, 3]
    assert steps(manager) == [2, 4]


def test_gc_can_be_retried_after_a_failed_deletion(tmp_path: Path, monkeypatch) -> None:
    deleted: list[int] = []
    manager = CheckpointManager(
        tmp_path, CheckpointSpec(keep_last=None), on_deleted=lambda i: deleted.append(i.step)
    )
    for step in (1, 2, 3):
        manager.save(step, state_at(step), blocking=True)
    storage = manager._storage
    real_delete_dir = storage.delete_dir
    monkeypatch.setattr(storage, "delete_dir", lambda name: (_ for _ in ()).throw(OSError("EIO")))
    with pytest.raises(CheckpointError, match="EIO"):
        manager.gc(keep_last=1)
    assert deleted == [] and (tmp_path / "step-0000000001" / "tensors.safetensors").exists()
    assert not (tmp_path / "step-0000000001" / "MANIFEST.json").exists()  # manifest went first
    with pytest.warns(CheckpointWarning, match="no MANIFEST.json"):
        assert steps(manager) == [2, 3]  # never half valid
    monkeypatch.setattr(storage, "delete_dir", real_delete_dir)
    manager.gc(keep_last=1)  # removes the leftovers of step 1, then step 2 by retention
    assert deleted == [2, 1] and sorted(p.name for p in tmp_path.iterdir()) == ["step-0000000003"]


def test_unfinished_folders_newer_than_the_latest_are_left_alone(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path, CheckpointSpec(keep_last=1))
    manager.save(5, state_at(5), blocking=True)
    (tmp_path / "step-0000000009").mkdir()
    (tmp_path / "step-0000000009" / ".tensors.safetensors.x.tmp").write_bytes(b"partial")
    with pytest.warns(CheckpointWarning, match="step-0000000009"):
        assert manager.gc() == [] and manager.latest().step == 5
    assert (tmp_path / "step-0000000009").exists()


def test_saving_a_step_again_replaces_it(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path, CheckpointSpec())
    manager.save(3, state_at(3), blocking=True)
    manager.save(3, state_at(30), blocking=True)
    state, info = manager.load()
    assert info.step == 3 and state["trainer"]["global_step"] == 30


def test_after_load_the_loaded_step_is_not_saved_again(tmp_path: Path) -> None:
    policy = CheckpointSpec(every_n_steps=5)
    CheckpointManager(tmp_path, policy).save(5, state_at(5), blocking=True)
    resumed = CheckpointManager(tmp_path, policy)
    resumed.load()
    assert not resumed.maybe_save(5, 0, 0.0, lambda: pytest.fail("saved again"))


def test_on_saved_runs_on_the_callers_thread_after_commit(tmp_path: Path) -> None:
    seen = []

    def on_saved(info: CheckpointInfo) -> None:
        assert (tmp_path / info.name / "MANIFEST.json").exists()
        seen.append((info.step, threading.get_ident()))

    manager = CheckpointManager(tmp_path, CheckpointSpec(), on_saved=on_saved)
    manager.save(1, state_at(1))
    assert manager.wait().step == 1
    assert seen == [(1, threading.get_ident())]


class SlowWrites:
    """Replaces the checkpoint writer: each write waits for `release` and records overlap."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release = threading.Event()
        self.in_flight = 0
        self.most_in_flight = 0
        self.values: list[float] = []
        self.real = _manager.write_checkpoint
        monkeypatch.setattr(_manager, "write_checkpoint", self)

    def __call__(self, storage, tree, tensors, meta):
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.release.wait(10)
        self.values.append(tensors["w"][0].item())
        self.in_flight -= 1
        return self.real(storage, tree, tensors, meta)


def test_async_save_returns_after_the_snapshot(tmp_path: Path, monkeypatch) -> None:
    writes = SlowWrites(monkeypatch)
    manager = CheckpointManager(tmp_path, CheckpointSpec())
    state = state_at(1)
    manager.save(1, state)  # returns although the write is blocked
    state["w"].fill_(99.0)  # training goes on and changes the tensors
    writes.release.set()
    manager.wait()
    assert writes.values == [1.0]
    assert torch.equal(manager.load()[0]["w"], torch.ones(8))


def test_at_most_one_save_in_flight(tmp_path: Path, monkeypatch) -> None:
    writes = SlowWrites(monkeypatch)
    manager = CheckpointManager(tmp_path, CheckpointSpec(keep_last=None))
    manager.save(1, state_at(1))
    threading.Timer(0.3, writes.release.set).start()
    started = time.perf_counter()
    manager.save(2, state_at(2))  # waits until the first save is written
    assert time.perf_counter() - started >= 0.25
    manager.close()
    assert writes.values == [1.0, 2.0] and writes.most_in_flight == 1
    assert steps(manager) == [1, 2]


def test_background_errors_surface_on_the_next_call(tmp_path: Path, monkeypatch) -> None:
    manager = CheckpointManager(tmp_path, CheckpointSpec(keep_last=None))
    storage = manager._storage
    real_write = storage.write
    monkeypatch.setattr(storage, "write", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    manager.save(1, state_at(1))
    with pytest.raises(CheckpointError, match=r"saving step 1 .* disk full") as caught:
        manager.wait()
    assert isinstance(caught.value.__cause__, OSError)
    manager.save(2, state_at(2))
    time.sleep(0.2)
    with pytest.raises(CheckpointError, match="disk full"):
        manager.save(3, state_at(3))  # raises, and does not save step 3
    monkeypatch.setattr(storage, "write", real_write)
    manager.save(4, state_at(4))
    assert manager.wait().step == 4 and steps(manager) == [4]


def test_unstorable_state_is_refused_on_the_callers_thread(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path, CheckpointSpec())
    with pytest.raises(CheckpointError, match="'trainer/hook'"):
        manager.save(1, {"trainer": {"hook": print}})
    with pytest.raises(CheckpointError, match="mapping"):
        manager.save(1, [torch.zeros(1)])
    with pytest.raises(CheckpointError, match="metrics must be numbers"):
        manager.save(1, state_at(1), metrics={"loss": "low"})
    assert manager.wait() is None and manager.latest() is None


def test_close_waits_for_the_save_in_flight(tmp_path: Path) -> None:
    with CheckpointManager(tmp_path, CheckpointSpec()) as manager:
        manager.save(1, state_at(1))
    assert (tmp_path / "step-0000000001" / "MANIFEST.json").exists()


def test_locations_by_uri(tmp_path: Path) -> None:
    assert CheckpointManager(f"file://{tmp_path}").location == str(tmp_path)
    with pytest.raises(CheckpointError, match="'nope://bucket/x': unknown protocol 'nope'.*s3"):
        CheckpointManager("nope://bucket/x", CheckpointSpec())
