"""Trains a small regression model with FSDP and sharded checkpoints; run by test_reshard.py
through torchrun, once to write checkpoints and once to resume them at another world size.

    python -m torch.distributed.run --standalone --nproc-per-node W \\
        reshard_script.py CHECKPOINTS OUT.json BATCH_PER_RANK [STOP_AT_STEP]

With STOP_AT_STEP training stops one step after that step, whose checkpoint is saved
(asynchronously, every STOP_AT_STEP steps): the step after it is lost as in a crash. Without
it, training resumes from the newest checkpoint and runs to the end. Rank 0 writes
{"steps": [...], "train_loss": [...], "resumed_from": step or null,
"geometry": [rows per micro-batch, micro-batches per step, processes]}.
`train` is also what the test runs in one process, for the reference curve.
"""

from __future__ import annotations

import gc
import json
import os
import sys

import numpy as np
import torch

from trainforge.config import ModelSpec, TrainingSpec
from trainforge.models import build_model
from trainforge.train import Callback, Trainer, process_group

ROWS, FEATURES, EPOCHS = 256, 6, 2


class Recorder:
    def __init__(self) -> None:
        self.points: list[tuple[int, float]] = []

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        if "train_loss" in metrics:
            self.points.append((step, metrics["train_loss"]))


class StopAfter(Callback):
    """Stops training one step after `step` (whose checkpoint must not hold the stop)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, trainer: Trainer) -> None:
        if trainer.state.global_step == self.step + 1:
            trainer.state.should_stop = True


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    y = (x[:, 0] - 2 * x[:, 1] * x[:, 2] + 0.1 * rng.normal(size=ROWS)).astype(np.float32)
    return x, y


def train(strategy: str, batch_size: int, checkpoints: str | None = None,
          stop_at: int | None = None) -> dict:
    torch.manual_seed(0)
    model = build_model(ModelSpec(task="regression", hidden=[16, 16]), FEATURES, 1)
    config = TrainingSpec(
        epochs=EPOCHS, batch_size=batch_size, strategy=strategy, device="cpu",
        optimizer={"name": "adamw", "lr": 0.01}, log_every_n_steps=1, progress="off",
        schedule={"name": "cosine", "warmup_steps": 2},
        checkpoint={"every_n_steps": stop_at or 1000, "at_epoch_end": False},
    )
    recorder = Recorder()
    trainer = Trainer(model, data(), None, config, task="regression", run=recorder,
                      checkpoint_dir=checkpoints, resume=stop_at is None and bool(checkpoints),
                      callbacks=[StopAfter(stop_at)] if stop_at else [])
    trainer.fit()
    resumed = trainer.checkpointing.resumed_from
    geometry = trainer.geometry
    return {"steps": [s for s, _ in recorder.points],
            "train_loss": [v for _, v in recorder.points],
            "resumed_from": resumed.step if resumed else None,
            "geometry": [geometry.batch_size, geometry.accumulate, geometry.world_size]}


def main(checkpoints: str, out: str, batch_size: str, stop_at: str | None = None) -> None:
    with process_group("cpu"):
        result = train("fsdp", int(batch_size), checkpoints, int(stop_at) if stop_at else None)
        rank = torch.distributed.get_rank()
    if rank == 0:
        with open(out, "w") as fh:
            json.dump(result, fh)


if __name__ == "__main__":
    gc.freeze()  # what the imports made, out of the collector's sight (as in trainforge's)
    main(*sys.argv[1:])
    # As distributed_script.py: the group is destroyed and the results are written, so leave
    # without the interpreter's teardown, where a gloo C++ thread still joinable aborts the
    # process now and then ("terminate called without an active exception", SIGABRT).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
