"""Pins (retention keeps a pinned checkpoint) and verified byte-for-byte copies between
locations, what population-based training's exploit step relies on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainforge.config import CheckpointSpec
from trainforge.errors import CheckpointError
from trainforge.train.checkpoint import CheckpointManager, select_deletions
from trainforge.train.checkpoint._format import CheckpointInfo

FILES = ("tensors.safetensors", "state.json", "MANIFEST.json")


def state(value: float) -> dict[str, object]:
    return {"model": {"w": torch.full((4, 3), value)}, "trainer": {"value": value}}


def steps(manager: CheckpointManager) -> list[int]:
    return [info.step for info in manager.list()]


def test_select_deletions_keeps_pinned_steps() -> None:
    infos = [CheckpointInfo(step, f"/c/{step}") for step in (1, 2, 3, 4)]
    deleted = select_deletions(infos, keep_last=1, keep_best=0, monitor=None, mode="min",
                               pinned={2})
    assert [info.step for info in deleted] == [1, 3]


def test_a_pinned_checkpoint_outlives_retention_until_unpinned(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path, CheckpointSpec(keep_last=1, async_save=False))
    manager.save(1, state(1.0))
    with manager.pinned(1):
        with manager.pinned(1):  # pins nest
            manager.save(2, state(2.0))
        manager.save(3, state(3.0))
        assert steps(manager) == [1, 3]
        loaded, _ = manager.load(manager.list()[0])
        assert torch.equal(loaded["model"]["w"], torch.full((4, 3), 1.0))
    manager.save(4, state(4.0))
    assert steps(manager) == [4]


def test_copy_from_is_byte_for_byte_and_replaces_that_step(tmp_path: Path) -> None:
    donor = CheckpointManager(tmp_path / "donor", CheckpointSpec(async_save=False))
    saved: list[int] = []
    recipient = CheckpointManager(tmp_path / "recipient", CheckpointSpec(async_save=False),
                                  on_saved=lambda info: saved.append(info.step))
    donor.save(5, state(5.0))
    recipient.save(5, state(-1.0))
    copied = recipient.copy_from(donor, donor.list()[0])
    assert copied.step == 5 and saved == [5, 5]
    for name in FILES:
        assert ((tmp_path / "recipient" / "step-0000000005" / name).read_bytes()
                == (tmp_path / "donor" / "step-0000000005" / name).read_bytes())
    loaded, _ = recipient.load()
    assert torch.equal(loaded["model"]["w"], torch.full((4, 3), 5.0))


def test_a_corrupted_source_is_not_copied_and_the_target_is_untouched(tmp_path: Path) -> None:
    donor = CheckpointManager(tmp_path / "donor", CheckpointSpec(async_save=False))
    recipient = CheckpointManager(tmp_path / "recipient", CheckpointSpec(async_save=False))
    donor.save(5, state(5.0))
    recipient.save(5, state(-1.0))
    weights = tmp_path / "donor" / "step-0000000005" / "tensors.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"tensors\.safetensors: .*checksum mismatch"):
        recipient.copy_from(donor, donor.list()[0])
    loaded, _ = recipient.load()
    assert torch.equal(loaded["model"]["w"], torch.full((4, 3), -1.0))
