"""Trains the same small model under each strategy; run by test_distributed.py through torchrun.

    python -m torch.distributed.run --standalone --nproc-per-node 2 \
        distributed_script.py OUT.json [DEVICE]

DEVICE is `cpu` (gloo, the default) or `cuda` (NCCL, one device per process: tests/gpu).

Rank 0 writes {case: {"train_loss": [...], "val_loss": [...], "weights": {name: [...]}}} and,
under "validation", each strategy's val metrics and the rows each rank scored.
`train_case` is also what the test runs in one process, for the reference curves.
"""

from __future__ import annotations

import gc
import json
import os
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


def train_case(strategy: str, accumulate: int, clip: float | None, batch_size: int,
               device: str = "cpu") -> dict:
    train, val = data()
    torch.manual_seed(0)
    model = build_model(ModelSpec(task="regression", hidden=[16, 16]), FEATURES, 1)
    config = TrainingSpec(
        epochs=3, batch_size=batch_size, accumulate_grad_batches=accumulate, strategy=strategy,
        device=device, optimizer={"name": "adamw", "lr": 0.01}, log_every_n_steps=1,
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


VAL_ROWS = 65  # odd: the second rank's share is padded with the first row


def validation_case(strategy: str, device: str = "cpu") -> dict:
    """A binary classifier validated each epoch on `VAL_ROWS` rows: the val metrics rank 0
    logged, and how many rows this process scored in eval mode. The learning rate is too
    small to move a float32 weight, so every strategy validates the very same weights and any
    difference in the metrics is the validation's own."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(128 + VAL_ROWS, FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] + 0.5 * rng.normal(size=len(x)) > 0).astype(np.float32)
    torch.manual_seed(0)
    model = build_model(ModelSpec(task="binary", hidden=[16]), FEATURES, 1)
    scored = [0]

    def count_rows(module: torch.nn.Module, args: tuple, output: torch.Tensor) -> None:
        if not module.training:
            scored[0] += len(args[0])

    model.register_forward_hook(count_rows)
    config = TrainingSpec(epochs=2, batch_size=32, strategy=strategy, device=device,
                          optimizer={"name": "adamw", "lr": 1e-12}, progress="off")
    recorder = Recorder()
    Trainer(model, (x[:128], y[:128]), (x[128:], y[128:]), config, task="binary",
            run=recorder).fit()
    return {"val": {k: v for k, v in recorder.series.items() if k.startswith("val_")},
            "scored_rows": scored[0]}


def collectives(device: str) -> dict:
    """The strategy's own collectives, in the group the trainers joined."""
    strategy = make_strategy("ddp", device)
    mean = strategy.reduce_mean(torch.tensor([float(strategy.rank)],
                                             device=strategy.device)).item()
    strategy.barrier()
    return {"mean_of_ranks": mean, "world_size": strategy.world_size}


def main(out: str, device: str = "cpu") -> None:
    with process_group(device):  # this script is the workers' entry point
        results = {name: train_case(*case, BATCH_PER_RANK, device=device)
                   for name, case in CASES.items() if case[0] != "fsdp" or FSDP2}
        results["collectives"] = collectives(device)
        results["validation"] = {}
        for strategy in ("ddp", "fsdp") if FSDP2 else ("ddp",):
            case = validation_case(strategy, device)
            scored: list[int] = [0] * torch.distributed.get_world_size()
            torch.distributed.all_gather_object(scored, case["scored_rows"])
            results["validation"][strategy] = {**case, "scored_rows": scored}
        rank = torch.distributed.get_rank()
    if rank == 0:
        with open(out, "w") as fh:
            json.dump(results, fh)
            fh.flush()
            os.fsync(fh.fileno())


if __name__ == "__main__":
    gc.freeze()  # what the imports made, out of the collector's sight (as in trainforge's)
    main(*sys.argv[1:])
    # The group is destroyed and the results are on disk. Leave without the interpreter's
    # teardown: in about one run of five, a C++ thread of torch's gloo backend is still
    # joinable when it is destroyed there ("terminate called without an active exception",
    # SIGABRT), and torchrun then fails the whole job after its work was done and checked.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
