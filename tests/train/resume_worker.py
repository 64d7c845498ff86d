"""Attempts of a tracked training run, for the kill-and-resume test.

    python resume_worker.py DB_URL OUT_DIR

reads one line per attempt on stdin, `NUM_WORKERS [RUN_ID]`, and runs each attempt in a
process of its own, forked from this one once torch and trainforge are imported (so an attempt
starts in milliseconds): it prints `pid <n>`, the attempt's own lines, then `exit <code>` when
the attempt ended (`exit -9` when it was killed with SIGKILL).

An attempt without RUN_ID starts a run; with it, it resumes that run from its newest
checkpoint. It prints `run <id>` once training is set up, `step <n>` after every optimizer step
(before that step's checkpoint is saved) and `epoch <e>` after every epoch's validation (before
its checkpoint); at the end it writes the final weights to OUT_DIR/<run_id>.safetensors. The
model carries a 50 MB buffer so that every checkpoint write takes long enough to be killed in
the middle of.
"""

from __future__ import annotations

import gc
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from trainforge.config import ModelSpec, TrainingSpec
from trainforge.models import build_model
from trainforge.storage import SqlStore
from trainforge.tracking import start_run
from trainforge.train import Callback, Trainer, save_weights
from trainforge.train.checkpoint import CheckpointWarning

SPEC = TrainingSpec(
    epochs=4, batch_size=32, seed=7, deterministic=True, device="cpu", progress="off",
    log_every_n_steps=1, optimizer={"lr": 0.01}, schedule={"name": "cosine", "warmup_steps": 5},
    checkpoint={"every_n_steps": 5, "keep_last": 2},
)
STEPS_PER_EPOCH = 15  # 480 rows / 32


class NoisyRows(Dataset):
    """A fixed learnable problem whose rows get fresh random noise at every fetch."""

    def __init__(self, rows: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.x = torch.from_numpy(rng.normal(size=(rows, 8)).astype(np.float32))
        self.y = (self.x[:, 0] * self.x[:, 1] + self.x[:, 2] > 0).float()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[index] + 0.1 * torch.randn(8), self.y[index]


class Announce(Callback):
    def on_fit_start(self, trainer: Trainer) -> None:
        print(f"run {trainer.sink.run_id}", flush=True)

    def on_step_end(self, trainer: Trainer) -> None:
        print(f"step {trainer.state.global_step}", flush=True)

    def on_epoch_end(self, trainer: Trainer) -> None:
        print(f"epoch {trainer.state.epoch}", flush=True)


def model() -> nn.Module:
    torch.manual_seed(0)
    built = build_model(ModelSpec(task="binary", hidden=[64, 32], dropout=0.2), 8, 1)
    built.register_buffer("ballast", torch.arange(12_500_000, dtype=torch.float32))
    return built


def attempt(db_url: str, out: Path, num_workers: int, resume: str | None) -> None:
    warnings.simplefilter("ignore", CheckpointWarning)  # killed saves leave folders behind
    spec = SPEC.model_copy(update={"num_workers": num_workers})
    store = SqlStore(db_url)
    with start_run("kill-resume", {"num_workers": num_workers}, store=store,
                   artifacts=out / "artifacts", resume=resume) as run:
        location = out / "checkpoints" / run.run_id
        trainer = Trainer(model(), NoisyRows(480, 1), NoisyRows(128, 2), spec, "binary", run,
                          callbacks=[Announce()], checkpoint_dir=location, resume=True)
        result = trainer.fit()
        save_weights(result.model, out / f"{run.run_id}.safetensors")
    store.close()


def serve(db_url: str, out: Path) -> None:
    gc.freeze()  # before the forks: what the imports made, out of every attempt's collector
    for command in sys.stdin:
        num_workers, *run_id = command.split()
        pid = os.fork()
        if pid == 0:
            code = 1
            print(f"pid {os.getpid()}", flush=True)
            try:
                attempt(db_url, out, int(num_workers), run_id[0] if run_id else None)
                code = 0
            finally:
                sys.stdout.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(f"exit {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    serve(sys.argv[1], Path(sys.argv[2]))
