"""Checkpoint figures: our durable save, async stall and verified load against plain torch.

A stack of Linear layers of about 100M parameters with AdamW state after one step (about 1.2 GB)
is saved and loaded in a temporary folder (same filesystem for both sides), in interleaved rounds
whose order alternates; each ratio is the median of the per-round ratios. The machine's load
average is printed too: other work on the machine skews every figure. Prints one JSON object:

- `durable_save_ratio`: `CheckpointManager.save(blocking=True)` (streamed safetensors + JSON,
  xxh3 checksums, fsync of files and folder, manifest last) / `torch.save` + flush + fsync.
  Goal <= 1.25.
- `async_stall_ratio`: time `save(blocking=False)` keeps the training thread (the CPU snapshot)
  / the blocking save (median of 3 per round). Goal <= 0.20.
- `async_stall_first_ratio`: the same for the first async save of a fresh manager, as the
  trainer makes it: `prepare(state)` after the first step fills the snapshot buffer in the
  background while `TRAIN_STEPS` training steps run, then the save. Goal <= 0.20.
  `async_stall_first_unprepared_s` is that first save without `prepare` (it allocates and
  faults in the buffer itself); `train_steps_s` / `train_steps_while_preparing_s` time the
  training steps without and with the buffer being filled beside them.
- `load_ratio`: `CheckpointManager.load(info)` (manifest, checksums, then safetensors) /
  `torch.load` (`weights_only=False`: the NumPy RNG state needs full unpickling, the very thing
  our format avoids). Goal <= 1.25. `restore_ratio` times both up to the first step after
  resuming (`load_state_dict` into model and optimizer, then `optimizer.step()`).

    .venv/bin/python benchmarks/checkpoint.py [--rounds 7] [--dir /path/on/the/disk]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainforge.config import CheckpointSpec
from trainforge.train.checkpoint import CheckpointManager, capture_rng_state


def build(width: int, depth: int) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model(torch.randn(8, width)).square().mean().backward()
    optimizer.step()
    return model, optimizer


def full_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": capture_rng_state(),
        "data": {"epoch": 0, "batch": 1, "seed": 0},
        "trainer": {"global_step": 1, "best_metric": None},
    }


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def alternating(actions: dict[str, Callable[[], Any]], round_index: int) -> list[str]:
    """The names in an order that flips every round, so neither side always goes first."""
    names = list(actions)
    return names if round_index % 2 else names[::-1]


def plain_save(state: dict[str, Any], path: Path) -> None:
    with open(path, "wb") as out:
        torch.save(state, out)
        out.flush()
        os.fsync(out.fileno())


def restore(model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Resume up to the first optimizer step, which reads and writes every state tensor."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    optimizer.step()


STALL_SAMPLES = 3  # the stall is a memory copy: short, and the most disturbed by other work


def one_round(step: int, bench: dict[str, Any], times: dict[str, list[float]]) -> None:
    """One round: each save, load and restore timed once, the async stall three times."""
    state, manager, plain_path = bench["state"], bench["manager"], bench["plain_path"]
    saves = {
        "plain_save": lambda: plain_save(state, plain_path),
        "durable_save": lambda: manager.save(step, state, blocking=True),
    }
    for name in alternating(saves, step):
        times[name].append(timed(saves[name])[0])
    stalls = []
    for sample in range(STALL_SAMPLES):
        stalls.append(timed(partial(manager.save, 10_000 * (sample + 1) + step, state))[0])
        manager.wait()
    times["async_stall"].append(statistics.median(stalls))
    info = manager.latest()
    loads = {
        "plain_load": lambda: torch.load(plain_path, weights_only=False),
        "verified_load": lambda: manager.load(info)[0],
    }
    for name in alternating(loads, step):
        seconds, loaded = timed(loads[name])
        resume, _ = timed(partial(restore, bench["model"], bench["optimizer"], loaded))
        times[name].append(seconds)
        times[name.replace("load", "restore")].append(seconds + resume)
        del loaded
    for folder in Path(manager.location).iterdir():
        shutil.rmtree(folder)
    plain_path.unlink()


TRAIN_STEPS = 3  # steps between `prepare` (after the first step) and the first save


def train_steps(model: nn.Module, optimizer: torch.optim.Optimizer) -> float:
    """Seconds of `TRAIN_STEPS` forward, backward and AdamW steps of the benchmark model."""
    width = model[0].in_features

    def step() -> None:
        model(torch.randn(64, width)).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()

    return sum(timed(step)[0] for _ in range(TRAIN_STEPS))


def first_saves(root: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """The first async save of a fresh manager, without and with `prepare` ahead of it."""
    state = full_state(model, optimizer)
    unprepared = CheckpointManager(root / "unprepared", CheckpointSpec(keep_last=None), "bench")
    stall_unprepared, _ = timed(lambda: unprepared.save(0, state))
    unprepared.close()
    shutil.rmtree(root / "unprepared")
    baseline_steps = train_steps(model, optimizer)
    prepared = CheckpointManager(root / "prepared", CheckpointSpec(keep_last=None), "bench")
    prepared.prepare({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                     headroom=0.01)
    steps_while_preparing = train_steps(model, optimizer)
    stall, _ = timed(lambda: prepared.save(0, full_state(model, optimizer)))
    prepared.close()
    shutil.rmtree(root / "prepared")
    return {"first_stall": stall, "first_stall_unprepared": stall_unprepared,
            "train_steps": baseline_steps, "train_steps_while_preparing": steps_while_preparing}


def measure(rounds: int, root: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    bench = {
        "model": model,
        "optimizer": optimizer,
        "state": full_state(model, optimizer),
        "manager": CheckpointManager(root / "ours", CheckpointSpec(keep_last=None), "bench"),
        "plain_path": root / "plain.pt",
    }
    first = first_saves(root, model, optimizer)
    bench["manager"].save(0, bench["state"])
    bench["manager"].wait()
    times: dict[str, list[float]] = defaultdict(list)
    for step in range(1, rounds + 1):
        one_round(step, bench, times)
    bench["manager"].close()
    return {"times": dict(times), **first}


RATIOS = {  # name: (ours, baseline, goal)
    "durable_save_ratio": ("durable_save", "plain_save", 1.25),
    "async_stall_ratio": ("async_stall", "durable_save", 0.20),
    "load_ratio": ("verified_load", "plain_load", 1.25),
    "restore_ratio": ("verified_restore", "plain_restore", None),
}


def report(result: dict, params: int, size: int) -> dict:
    """Medians per measure; each ratio is the median of the per-round ratios (paired in time)."""
    times = result["times"]
    out: dict[str, Any] = {"parameters": params, "checkpoint_bytes": size}
    out["rounds"] = len(times["plain_save"])
    out["load_average_1min"] = round(os.getloadavg()[0], 2)
    out.update({f"{k}_s": round(statistics.median(v), 3) for k, v in times.items()})
    out["async_stall_first_s"] = round(result["first_stall"], 3)
    out["async_stall_first_unprepared_s"] = round(result["first_stall_unprepared"], 3)
    out["async_stall_first_ratio"] = round(
        result["first_stall"] / statistics.median(times["durable_save"]), 3)
    out["async_stall_first_ratio_goal_met"] = out["async_stall_first_ratio"] <= 0.20
    out["train_steps_s"] = round(result["train_steps"], 3)
    out["train_steps_while_preparing_s"] = round(result["train_steps_while_preparing"], 3)
    for name, (ours, baseline, goal) in RATIOS.items():
        paired = [a / b for a, b in zip(times[ours], times[baseline], strict=True)]
        out[name] = round(statistics.median(paired), 3)
        if goal is not None:
            out[f"{name}_goal_met"] = out[name] <= goal
    out["all_times_s"] = {k: [round(x, 3) for x in v] for k, v in times.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--depth", type=int, default=24)
    parser.add_argument("--dir", default=None, help="a folder on the disk to measure")
    args = parser.parse_args()
    model, optimizer = build(args.width, args.depth)
    params = sum(p.numel() for p in model.parameters())
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="tf-ckpt-bench-") as tmp:
        result = measure(args.rounds, Path(tmp), model, optimizer)
        size = sum(t.numel() * t.element_size() for t in model.state_dict().values()) * 3
    print(json.dumps(report(result, params, size), indent=2))


if __name__ == "__main__":
    main()
