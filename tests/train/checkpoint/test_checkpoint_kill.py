"""A process saving checkpoints in a loop, killed with SIGKILL at seeded random moments."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
import torch

from trainforge.config import CheckpointSpec
from trainforge.train.checkpoint import CheckpointManager

SAVER = textwrap.dedent(
    """
    import sys
    import warnings

    import torch

    from trainforge.config import CheckpointSpec
    from trainforge.train.checkpoint import CheckpointManager

    warnings.simplefilter("ignore")
    manager = CheckpointManager(sys.argv[1], CheckpointSpec(keep_last=2), run_id="kill")
    latest = manager.latest()
    step = latest.step + 1 if latest else 1
    model = {f"w{i}": torch.zeros(2_000_000) for i in range(8)}  # 64 MB: writes take a while
    print("ready", flush=True)
    while True:
        for tensor in model.values():
            tensor.fill_(float(step))
        manager.save(step, {"model": model, "trainer": {"step": step}}, metrics={"loss": 1 / step})
        step += 1
    """
)


def unfinished(location: Path) -> bool:
    """Whether a killed save or deletion left something behind."""
    return any(
        not (folder / "MANIFEST.json").exists()
        or any(f.name.startswith(".") for f in folder.iterdir())
        for folder in location.glob("step-*")
    )


def check_latest(location: Path) -> int:
    """The newest checkpoint verifies and holds exactly its own step; return that step."""
    manager = CheckpointManager(location, CheckpointSpec())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info = manager.latest()
        if info is None:
            return 0
        state, loaded = manager.load()
    assert loaded == info, [str(w.message) for w in caught]
    assert state["trainer"]["step"] == info.step and info.metrics == {"loss": 1 / info.step}
    for tensor in state["model"].values():
        assert torch.equal(tensor, torch.full((2_000_000,), float(info.step)))
    assert not any("falling back" in str(w.message) for w in caught)
    return info.step


@pytest.mark.slow
def test_killed_saver_never_leaves_a_partial_checkpoint(tmp_path: Path) -> None:
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    location = tmp_path / "checkpoints"
    delays = random.Random(20240611)
    left_unfinished, steps = [], [0]
    for _ in range(5):
        with open(tmp_path / "stderr.txt", "w") as errors:
            saver = subprocess.Popen(
                [sys.executable, str(script), str(location)],
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            )
            assert saver.stdout.readline().strip() == "ready", (tmp_path / "stderr.txt").read_text()
            time.sleep(delays.uniform(0.1, 0.9))
            saver.send_signal(signal.SIGKILL)
            saver.wait()
            saver.stdout.close()
        left_unfinished.append(unfinished(location))
        steps.append(check_latest(location))
    assert steps == sorted(steps) and steps[-1] > 0, steps
    assert any(left_unfinished), "no kill landed during a write; make the state larger"
