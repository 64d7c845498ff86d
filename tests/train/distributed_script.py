"""Trains the same small model under each strategy; run by test_distributed.py through torchrun.

    python -m torch.distributed.run --standalone --nproc-per-node 2 distributed_script.py OUT.json

Rank 0 writes {case: {"train_loss": [...], "val_loss": [...], "weights": {name: [...]}}}.
`train_case` is also what the test runs in one process, for the reference curves.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch
import torch.distributed.fsdp as fsdp

from trainforge.config import ModelSpec, TrainingSpec
from trainforge.models import build_model
from trainforge.train import Trainer, make_strategy, process_group

ROWS, FEATURES, BATCH_PER_RANK = 256, 6, 16
FSDP2 = hasattr(fsdp, "fully_shard")  # public since torch 2.6
CASES = {  # name: (strategy, accumulate_grad_batches, clip by norm at)
    "ddp": ("ddp", 1, None),
    "ddp_accumulate": ("ddp", 2, None),
    "ddp_clip": ("ddp", 1, 0.5),  # the gradient norm is read and used every step
    "fsdp": ("fsdp", 1, None),
    "fsdp_accumulate": ("fsdp", 2, None),
    "fsdp_clip": ("fsdp", 1, 0.5),
}


class Recorder:
    def __init__(self) -> None:
        self.series: dict[str, list[float]] = {}

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        for key, value in metrics.items():
            self.series.setdefault(key, []).append(value)


def data() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(ROWS + 64, FEATURES)).astype(np.float32)
    y = (x[:, 0] - 2 * x[:, 1] * x[:, 2] + 0.1 * rng.normal(size=len(x))).astype(np.float32)
    return (x[:ROWS], y[:ROWS]), (x[ROWS:], y[ROWS:])


def train_case(strategy: str, accumulate: int, clip: float | None, batch_size: int) -> dict:
    train, val = data()
    torch.manual_seed(0)
    model = build_model(ModelSpec(task="regression", hidden=[16, 16]), FEATURES, 1)
    config = TrainingSpec(
        epochs=3, batch_size=batch_size, accumulate_grad_batches=accumulate, strategy=strategy,
        device="cpu", optimizer={"name": "adamw", "lr": 0.01}, log_every_n_steps=1,
        progress="off", schedule={"name": "cosine", "warmup_steps": 2},
        clip={"mode": "norm", "max": clip} if clip else None,
    )
    recorder = Recorder()
    result = Trainer(model, train, val, config, task="regression", run=recorder).fit()
    weights = {k: v.flatten().tolist() for k, v in result.model.state_dict().items()}
    # Only rank 0 reports: other ranks' recorders stay empty.
    return {"train_loss": recorder.series.get("train_loss", []),
            "grad_norm": recorder.series.get("grad_norm", []),
            "val_loss": recorder.series.get("val_loss", []), "weights": weights}


def collectives() -> dict:
    """The strategy's own collectives, in the group the trainers joined."""
    strategy = make_strategy("ddp", "cpu")
    mean = strategy.reduce_mean(torch.tensor([float(strategy.rank)])).item()
    strategy.barrier()
    return {"mean_of_ranks": mean, "world_size": strategy.world_size}


def main(out: str) -> None:
    with process_group("cpu"):  # this script is the workers' entry point
        results = {name: train_case(*case, BATCH_PER_RANK) for name, case in CASES.items()
                   if case[0] != "fsdp" or FSDP2}
        results["collectives"] = collectives()
        rank = torch.distributed.get_rank()
    if rank == 0:
        with open(out, "w") as fh:
            json.dump(results, fh)


if __name__ == "__main__":
    main(sys.argv[1])
