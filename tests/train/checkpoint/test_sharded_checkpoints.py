"""Sharded checkpoints in one process (FSDP over a group of one): to object storage (moto's S3)
and a local folder through torch.distributed.checkpoint, and what happens to bad ones.
Several processes and resharding: tests/train/test_reshard.py."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
from checkpoint_helpers import CrashAt
from torch import nn

from trainforge.config import TrainingSpec
from trainforge.errors import CheckpointError, TrainingError
from trainforge.train import Trainer, process_group
from trainforge.train.checkpoint import CheckpointManager, CheckpointWarning


@pytest.fixture
def group_of_one() -> Iterator[None]:
    if not dist.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    with process_group("cpu"):
        yield


def data(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    return x, (x[:, 0] - x[:, 1] > 0).astype(np.float32)


def trainer(location: str | Path, options: dict | None = None, *, strategy: str = "fsdp",
            resume: bool = False, crash: int | None = None, seed: int = 0) -> Trainer:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    spec = TrainingSpec(epochs=2, batch_size=32, device="cpu", progress="off", strategy=strategy,
                        checkpoint={"every_n_steps": 3, "storage_options": options or {}})
    return Trainer(model, data(256, 1), data(64, 2), spec, "binary",
                   callbacks=[CrashAt(crash)] if crash else [], checkpoint_dir=location,
                   resume=resume)


def newest_files(location: Path) -> tuple[Path, dict]:
    folder = sorted(location.glob("step-*"))[-1]
    return folder, json.loads((folder / "MANIFEST.json").read_text())["files"]


def test_a_sharded_checkpoint_on_s3_resumes_the_same_training(group_of_one, s3_location):
    location, options = s3_location
    whole = trainer(location + "-whole", options).fit()
    with pytest.raises(RuntimeError, match="node lost"):
        trainer(location, options, crash=11).fit()
    saved = CheckpointManager(location, storage_options=options).list()
    assert [(info.step, info.sharded_by) for info in saved] == [(6, 1), (8, 1), (9, 1)]
    resumed_trainer = trainer(location, options, resume=True, seed=42)
    resumed = resumed_trainer.fit()
    assert resumed_trainer.checkpointing.resumed_from.step == 9
    for ours, theirs in zip(resumed.model.parameters(), whole.model.parameters()):
        assert torch.allclose(ours, theirs, atol=1e-6)


def test_a_corrupted_shard_is_found_before_it_is_read_and_an_older_checkpoint_resumes(
    group_of_one, tmp_path
):
    with pytest.raises(RuntimeError, match="node lost"):
        trainer(tmp_path, crash=8).fit()
    folder, _ = newest_files(tmp_path)
    shard = folder / "__0_0.distcp"
    data_bytes = bytearray(shard.read_bytes())
    data_bytes[len(data_bytes) // 2] ^= 0xFF  # same size: only the checksum can tell
    shard.write_bytes(bytes(data_bytes))
    resumed = trainer(tmp_path, resume=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed.fit()
    assert resumed.checkpointing.resumed_from.step == 3
    message = " ".join(str(w.message) for w in caught if w.category is CheckpointWarning)
    assert f"{shard}: xxh3_128 checksum mismatch (corrupted)" in message


def test_a_manifest_naming_more_ranks_than_it_lists_is_not_a_checkpoint(group_of_one, tmp_path):
    with pytest.raises(RuntimeError, match="node lost"):
        trainer(tmp_path, crash=4).fit()
    folder, _ = newest_files(tmp_path)
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    (folder / "MANIFEST.json").write_text(json.dumps({**manifest, "world_size": 2}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert CheckpointManager(tmp_path).list() == []
    message = " ".join(str(w.message) for w in caught)
    assert "a sharded checkpoint of 2 processes lists shard files of ranks [0]" in message


def test_a_sharded_checkpoint_is_not_read_as_a_full_one(group_of_one, tmp_path):
    with pytest.raises(RuntimeError, match="node lost"):
        trainer(tmp_path, crash=4).fit()
    with pytest.raises(CheckpointError, match="a sharded checkpoint of 1 processes; load it "
                                              "with `load_sharded`"):
        CheckpointManager(tmp_path).load()
    ddp = trainer(tmp_path, strategy="ddp", resume=True)
    with pytest.raises(TrainingError, match="resume it with training.strategy: fsdp and "
                                            r"checkpoint.sharded: true \(this is 'ddp'"):
        ddp.fit()


def test_a_sharded_checkpoint_copies_byte_for_byte_with_its_dcp_files(group_of_one, tmp_path):
    with pytest.raises(RuntimeError, match="node lost"):
        trainer(tmp_path / "source", crash=4).fit()
    source = CheckpointManager(tmp_path / "source")
    target = CheckpointManager(tmp_path / "target")
    copied = target.copy_from(source, source.latest())
    assert (copied.step, copied.sharded_by) == (3, 1)
    assert target.list() == [copied]
    folder, files = newest_files(tmp_path / "target")
    assert {".metadata", "__0_0.distcp"} < set(files)
    for name in files:
        assert (folder / name).read_bytes() == (tmp_path / "source" / folder.name / name
                                                ).read_bytes()
