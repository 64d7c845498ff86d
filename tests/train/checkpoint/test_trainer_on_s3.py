"""The Trainer checkpointing to object storage (moto's S3 server) and resuming from it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from checkpoint_helpers import CrashAt
from torch import nn

from trainforge.config import TrainingSpec
from trainforge.train import Trainer
from trainforge.train.checkpoint import CheckpointManager


def data(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    return x, (x[:, 0] - x[:, 1] > 0).astype(np.float32)


def trainer(location: str, options: dict, *, resume: bool = False, crash: int | None = None,
            seed: int = 0) -> Trainer:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
    spec = TrainingSpec(epochs=2, batch_size=32, device="cpu", progress="off",
                        deterministic=True, checkpoint={"every_n_steps": 3,
                                                        "storage_options": options})
    callbacks = [CrashAt(crash)] if crash else []
    return Trainer(model, data(256, 1), data(64, 2), spec, "binary", callbacks=callbacks,
                   checkpoint_dir=location, resume=resume)


def test_a_trainer_resumes_from_its_s3_checkpoints_exactly(s3_location):
    location, options = s3_location
    whole = trainer(location + "-whole", options).fit()
    with pytest.raises(RuntimeError, match="node lost"):
        trainer(location, options, crash=11).fit()
    steps = [info.step for info in CheckpointManager(location, storage_options=options).list()]
    assert steps == [6, 8, 9]  # keep_last 3 of 3, 6, 8 (epoch end), 9
    resumed_trainer = trainer(location, options, resume=True, seed=42)
    resumed = resumed_trainer.fit()
    assert resumed_trainer.checkpointing.resumed_from.step == 9
    for ours, theirs in zip(resumed.model.parameters(), whole.model.parameters()):
        assert torch.equal(ours, theirs)
