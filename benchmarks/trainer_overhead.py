"""What the Trainer costs over a hand-written PyTorch loop (and over Lightning, when installed).

    .venv/bin/python benchmarks/trainer_overhead.py            # prints JSON
    .venv-peers/bin/python benchmarks/trainer_overhead.py      # with Lightning (make bench-peers)

Two cases, each the same model, data, optimizer (AdamW, the implementation the Trainer picks)
and seed through every contender:
  mlp   an MLP 32 -> 256 -> 256 -> 1 on 60,000 samples, batch 256, 3 epochs (705 steps);
  tiny  Linear(32, 1), batch 32, 20,000 steps, where per-step overhead dominates.
The Trainer runs with tracking on: a real run in a SQLite store, its default logging (every 50
steps), NaN guard and progress lines; no validation set (the plain loop has none either).

Timing: one intra-op thread for everyone (`--threads`), so a busy machine cannot stall an
OpenMP barrier; the contenders alternate within each of `--repeats` rounds. Reported, with the
ratios: `end_to_end` is the fastest whole run of each (wall seconds, and CPU seconds of the
process, which include the tracking thread's work); `per_step` is the fastest block of 50
consecutive steps of each over all rounds, in microseconds per step (each block holds one log
step), the figure least disturbed by other load on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

from trainforge.config import ModelSpec, OptimizerSpec, TrainingSpec
from trainforge.models import build_model
from trainforge.storage import SqlStore
from trainforge.tracking import start_run
from trainforge.train import Callback, Trainer, build_optimizer

CASES = {
    "mlp": {"rows": 60_000, "hidden": [256, 256], "batch": 256, "epochs": 3},
    "tiny": {"rows": 64_000, "hidden": [], "batch": 32, "epochs": 10},
}
FEATURES, LR, SEED = 32, 1e-3, 0
BLOCK = 50  # steps per timed block; the Trainer logs once per block (log_every_n_steps=50)
GOALS = {"mlp": 1.03, "tiny": 1.10}


def make_data(rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(rows, FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype(np.float32)
    return x, y


def make_model(case: dict) -> nn.Module:
    torch.manual_seed(SEED)
    return build_model(ModelSpec(task="binary", hidden=case["hidden"]), FEATURES, 1)


def plain_loop(
    case: dict, data: tuple[np.ndarray, np.ndarray], tmp: Path, clock: Clock
) -> None:
    """The hand-written loop: seeded shuffle per epoch; zero the gradients, forward, loss,
    backward, step. Zeroing first, as the Trainer does: on the mlp case it measured about 6%
    faster here than zeroing between the forward and the backward pass."""
    model = make_model(case)
    optimizer = build_optimizer(OptimizerSpec(lr=LR), list(model.parameters()), torch.device("cpu"))
    loss_fn = nn.BCEWithLogitsLoss()
    features, targets = torch.from_numpy(data[0]), torch.from_numpy(data[1])
    size = case["batch"]
    for epoch in range(case["epochs"]):
        order = torch.randperm(len(features), generator=torch.Generator().manual_seed(epoch))
        for first in range(0, len(features), size):
            rows = order[first : first + size]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(features[rows]).squeeze(-1), targets[rows])
            loss.backward()
            optimizer.step()
            clock.tick()


def trainforge_trainer(
    case: dict, data: tuple[np.ndarray, np.ndarray], tmp: Path, clock: Clock
) -> tuple[float, float]:
    """The Trainer reporting to a tracked run; times its construction and fit (the run's
    creation and end are outside, as the plain loop has none)."""
    config = TrainingSpec(epochs=case["epochs"], batch_size=case["batch"], seed=SEED,
                          device="cpu", optimizer={"lr": LR})
    store = SqlStore(f"sqlite:///{tmp / 'bench.db'}")
    try:
        with start_run("overhead", {"case": case}, store=store, artifacts=tmp / "art") as run:
            clock.start()
            Trainer(make_model(case), data, None, config, task="binary", run=run,
                    callbacks=[StepTicks(clock)]).fit()
            return clock.stop()
    finally:
        store.close()


def lightning_trainer(bare: bool) -> Callable[..., None]:
    """Lightning on the same model and batches: bare (no logger, checkpoints, progress bar,
    model summary) or with its defaults."""
    import lightning

    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)  # no banners per run

    class Module(lightning.LightningModule):
        def __init__(self, case: dict) -> None:
            super().__init__()
            self.model = make_model(case)
            self.loss_fn = nn.BCEWithLogitsLoss()

        def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], index: int):
            loss = self.loss_fn(self.model(batch[0]).squeeze(-1), batch[1])
            self.log("train_loss", loss)
            return loss

        def on_train_batch_end(self, *args: object) -> None:
            self.clock.tick()

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return build_optimizer(OptimizerSpec(lr=LR), list(self.parameters()),
                                   torch.device("cpu"))

    def run(case: dict, data: tuple[np.ndarray, np.ndarray], tmp: Path, clock: Clock) -> None:
        options = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                       enable_model_summary=False) if bare else {}
        trainer = lightning.Trainer(max_epochs=case["epochs"], accelerator="cpu", devices=1,
                                    default_root_dir=str(tmp), **options)
        module = Module(case)
        module.clock = clock
        with contextlib.redirect_stdout(sys.stderr):  # its model summary; stdout is the JSON
            trainer.fit(module, train_dataloaders=EpochBatches(case, data))

    return run


class EpochBatches:
    """The plain loop's batches as an iterable Lightning can take (reshuffled per pass)."""

    def __init__(self, case: dict, data: tuple[np.ndarray, np.ndarray]) -> None:
        self.features, self.targets = torch.from_numpy(data[0]), torch.from_numpy(data[1])
        self.size, self.epoch = case["batch"], 0

    def __len__(self) -> int:
        return -(-len(self.features) // self.size)

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.epoch)
        order = torch.randperm(len(self.features), generator=generator)
        self.epoch += 1
        for first in range(0, len(self.features), self.size):
            rows = order[first : first + self.size]
            yield self.features[rows], self.targets[rows]


class Clock:
    """Wall and process CPU seconds between `start()` and `stop()`, and of every `BLOCK`
    steps (`tick()` after each step)."""

    def __init__(self) -> None:
        self.blocks: list[tuple[float, float]] = []

    def start(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        self._steps, self._block = 0, (self._wall, self._cpu)

    def tick(self) -> None:
        self._steps += 1
        if self._steps % BLOCK == 0:
            now = time.perf_counter(), time.process_time()
            self.blocks.append((now[0] - self._block[0], now[1] - self._block[1]))
            self._block = now

    def stop(self) -> tuple[float, float]:
        return time.perf_counter() - self._wall, time.process_time() - self._cpu


class StepTicks(Callback):
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def on_step_end(self, trainer: Trainer) -> None:
        self.clock.tick()


def timed(contender: Callable, case: dict, data: tuple[np.ndarray, np.ndarray]) -> Clock:
    clock = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        clock.start()
        clock.total = contender(case, data, Path(tmp), clock) or clock.stop()
    return clock


def measure(case: dict, contenders: dict[str, Callable], repeats: int) -> dict[str, list[Clock]]:
    data = make_data(case["rows"])
    clocks: dict[str, list[Clock]] = {name: [] for name in contenders}
    names = list(contenders)
    for round_ in range(repeats):
        for name in names if round_ % 2 == 0 else reversed(names):
            clocks[name].append(timed(contenders[name], case, data))
    return clocks


def summarize(name: str, clocks: dict[str, list[Clock]]) -> dict[str, object]:
    """Best figures of each contender, and their ratios to the plain loop and Lightning."""
    best = {  # figure: (unit, digits, {contender: value})
        "end_to_end_wall": ("s", 3, {k: min(c.total[0] for c in v) for k, v in clocks.items()}),
        "end_to_end_cpu": ("s", 3, {k: min(c.total[1] for c in v) for k, v in clocks.items()}),
        "per_step_wall": ("us", 1, {k: min(b[0] for c in v for b in c.blocks) / BLOCK * 1e6
                                    for k, v in clocks.items()}),
        "per_step_cpu": ("us", 1, {k: min(b[1] for c in v for b in c.blocks) / BLOCK * 1e6
                                   for k, v in clocks.items()}),
    }
    summary: dict[str, object] = {"case": name, "goal_trainforge/plain": GOALS[name]}
    for figure, (unit, digits, values) in best.items():
        summary[f"{figure}_{unit}"] = {k: round(v, digits) for k, v in values.items()}
        summary[f"{figure}_ratios"] = {
            f"{a}/{b}": round(values[a] / values[b], 3) for a, b in _pairs(values)}
    return summary


def _pairs(values: dict[str, float]) -> list[tuple[str, str]]:
    peers = [name for name in values if name.startswith("lightning")]
    return [("trainforge", "plain"), *((peer, "plain") for peer in peers),
            *(("trainforge", peer) for peer in peers)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    contenders: dict[str, Callable] = {"plain": plain_loop, "trainforge": trainforge_trainer}
    try:
        contenders["lightning_bare"] = lightning_trainer(bare=True)
        contenders["lightning_defaults"] = lightning_trainer(bare=False)
        lightning_note = "measured"
    except ImportError:
        lightning_note = "not installed (make bench-peers, then run with .venv-peers/bin/python)"
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as home:
        os.environ["TRAINFORGE_HOME"] = home  # the runs' spill folder: never the user's
        results = [summarize(name, measure(CASES[name], contenders, args.repeats))
                   for name in args.cases]
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "cpus": os.cpu_count(), "load_average_1m": [load_before, os.getloadavg()[0]],
                      "lightning": lightning_note, "results": results}, indent=2))


if __name__ == "__main__":
    main()
