"""A tracked training run killed with SIGKILL at 20 seeded random moments, resumed each time,
ends bit for bit where an uninterrupted run ends: the same weights and the same metric series,
every step once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest
from safetensors.torch import load_file

from trainforge.storage import SqlStore
from trainforge.train.checkpoint import CheckpointManager, CheckpointWarning

WORKER = Path(__file__).with_name("resume_worker.py")
STEPS_PER_EPOCH, EPOCHS, EVERY_N_STEPS = 15, 4, 5
TOTAL_STEPS = STEPS_PER_EPOCH * EPOCHS
KILLS = 20
SERIES = ("train_loss", "lr", "grad_norm", "train_loss_epoch", "val_loss", "val_roc_auc")


class Attempts:
    """The worker server (see resume_worker.py): runs attempts, reads their lines, kills them."""

    def __init__(self, db_url: str, out: Path) -> None:
        self.server = subprocess.Popen([sys.executable, str(WORKER), db_url, str(out)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True)
        self.pid = 0

    def start(self, num_workers: int, run_id: str | None) -> str:
        """Start an attempt; return its run id."""
        self.server.stdin.write(f"{num_workers} {run_id or ''}\n")
        self.server.stdin.flush()
        self.pid = int(self._line().removeprefix("pid "))
        return self._line().removeprefix("run ")

    def wait_for(self, line: str) -> None:
        """Read the attempt's output up to `line`; fail if it ends first."""
        while (text := self._line()) != line:
            if text.startswith("exit "):
                pytest.fail(f"the attempt ended ({text}) before printing {line!r}")

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        self.finish(expect=-signal.SIGKILL)

    def finish(self, expect: int = 0) -> None:
        """Read up to the attempt's end; check its exit code."""
        while not (text := self._line()).startswith("exit "):
            pass
        assert int(text.removeprefix("exit ")) == expect

    def close(self) -> None:
        self.server.stdin.close()
        self.server.wait(timeout=30)

    def _line(self) -> str:
        text = self.server.stdout.readline()
        if not text:
            pytest.fail("the worker server stopped")
        return text.strip()


def next_kill(rng: random.Random, kill: int, at: int) -> tuple[str, float, str]:
    """(line to wait for, seconds to wait after it, kind) of a kill at step `at` or soon after:
    in the middle of an epoch, at the end of the epoch (after validation, before its
    checkpoint), or during the write of the next checkpoint (once its folder exists)."""
    kind = ("mid-epoch", "epoch-end", "checkpoint-write")[kill % 3]
    if kind == "epoch-end":
        return f"epoch {-(-at // STEPS_PER_EPOCH)}", rng.uniform(0, 0.005), kind
    if kind == "checkpoint-write":
        return f"step {-(-at // EVERY_N_STEPS) * EVERY_N_STEPS}", rng.uniform(0, 0.01), kind
    return f"step {at}", rng.uniform(0, 0.03), kind


def latest_checkpoint(location: Path) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CheckpointWarning)  # folders of killed saves
        info = CheckpointManager(location).latest()
    return info.step if info else 0


def checkpoint_folder(location: Path, step: int) -> Path:
    return location / f"step-{step:010d}"


def await_folder(folder: Path) -> None:
    """Wait until a checkpoint write has created `folder`."""
    deadline = time.monotonic() + 30
    while not folder.exists():
        assert time.monotonic() < deadline, f"{folder} never appeared"
        time.sleep(0.0005)


def series(db_url: str, run_id: str) -> dict[str, list[tuple[int, str]]]:
    store = SqlStore(db_url)
    try:
        return {key: [(p.step, p.value.hex()) for p in store.get_metric_history(run_id, key).items]
                for key in SERIES}
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("num_workers", [0, 2], ids=["workers0", "workers2"])
def test_a_run_killed_20_times_resumes_to_the_same_bits(tmp_path, num_workers):
    db_url = f"sqlite:///{tmp_path / 'runs.db'}"
    attempts = Attempts(db_url, tmp_path)
    reference_id = attempts.start(num_workers, None)
    attempts.finish()

    rng = random.Random(20261122 + num_workers)
    run_id, location, kinds, torn_writes = None, None, Counter(), 0
    moments = sorted(rng.sample(range(1, TOTAL_STEPS), KILLS))  # spread over the whole run
    for kill, moment in enumerate(moments):
        saved = latest_checkpoint(location) if location else 0  # the attempt resumes after it
        line, delay, kind = next_kill(rng, kill, max(moment, saved + 1))
        run_id = attempts.start(num_workers, run_id)
        location = tmp_path / "checkpoints" / run_id
        attempts.wait_for(line)
        folder = checkpoint_folder(location, int(line.split()[1]))
        if kind == "checkpoint-write":
            await_folder(folder)
        time.sleep(delay)
        attempts.kill()
        kinds[kind] += 1
        torn_writes += kind == "checkpoint-write" and not (folder / "MANIFEST.json").exists()
    assert attempts.start(num_workers, run_id) == run_id
    attempts.finish()
    attempts.close()

    assert kinds == {"mid-epoch": 7, "epoch-end": 7, "checkpoint-write": 6}
    # the write kills landed while the checkpoint was being written (it never got its manifest)
    assert torn_writes >= kinds["checkpoint-write"] // 2
    resumed, uninterrupted = series(db_url, run_id), series(db_url, reference_id)
    assert [step for step, _ in resumed["train_loss"]] == list(range(1, TOTAL_STEPS + 1))
    assert resumed == uninterrupted
    ours = load_file(tmp_path / f"{run_id}.safetensors")
    theirs = load_file(tmp_path / f"{reference_id}.safetensors")
    assert ours.keys() == theirs.keys()
    for name, tensor in ours.items():  # bit for bit, -0.0 and NaN payloads included
        assert tensor.numpy().tobytes() == theirs[name].numpy().tobytes(), name
