"""An elastic FSDP job whose workers record every row they train on; run by
test_elastic.py as two torchrun "nodes" of two processes each, one of which is killed.

    python -m torch.distributed.run --nnodes 1:2 --nproc-per-node 2 --max-restarts 1 \\
        --rdzv-backend c10d --rdzv-endpoint HOST:PORT --rdzv-id ID \\
        elastic_script.py CHECKPOINTS RECORDS HOLD_AT_STEP

Each worker appends one JSON line per optimizer step to RECORDS/rank<R>-attempt<A>.jsonl:
{"step", "rows" (the row ids of its micro-batches), "world", "geometry", "t" (wall clock)};
attempt A is torchrun's restart count. In the first attempt every worker holds after step
HOLD_AT_STEP (0: never) until RECORDS/released exists, so a test kills a node at a known step
however loaded the machine is, then releases the survivors into their next collective. Rank 0
writes RECORDS/resumed-<A>.json with the step it resumed from. Column 0 of the features is the
row id; the model never sees it.

The functions after `main` launch such a "node", kill one and release the rest
(test_elastic.py and benchmarks/recovery.py).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
from torch import nn

from trainforge.config import TrainingSpec
from trainforge.train import Callback, Trainer, process_group

ROWS, FEATURES, EPOCHS, BATCH_PER_RANK = 512, 4, 3, 16  # 4 processes: 64 rows a step
HOLD_TIMEOUT_S = 600.0


class RowRecorder(nn.Module):
    """The model, behind a first layer that notes the row ids of each training batch."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, 1))
        self.seen: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.seen.extend(int(v) for v in x[:, 0].tolist())
        return self.inner(x[:, 1:])


class StepLog(Callback):
    def __init__(self, model: RowRecorder, path: Path, hold_at_step: int) -> None:
        self.model, self.path, self.hold_at_step = model, path, hold_at_step

    def on_step_end(self, trainer: Trainer) -> None:
        geometry = trainer.geometry
        record = {"step": trainer.state.global_step, "rows": self.model.seen,
                  "world": trainer.strategy.world_size, "t": time.time(),
                  "geometry": [geometry.batch_size, geometry.accumulate, geometry.world_size]}
        with self.path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        self.model.seen = []
        if trainer.state.global_step == self.hold_at_step:
            _wait_for_release(self.path.parent)


def _wait_for_release(records: Path) -> None:
    deadline = time.monotonic() + HOLD_TIMEOUT_S
    while not (records / "released").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing created {records / 'released'} in {HOLD_TIMEOUT_S} s")
        time.sleep(0.1)


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(ROWS, FEATURES + 1)).astype(np.float32)
    x[:, 0] = np.arange(ROWS)
    return x, (x[:, 1] - x[:, 2] > 0).astype(np.float32)


def main(checkpoints: str, records: str, hold_at_step: str) -> None:
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    with process_group("cpu"):
        rank = torch.distributed.get_rank()
        torch.manual_seed(0)
        model = RowRecorder()
        config = TrainingSpec(epochs=EPOCHS, batch_size=BATCH_PER_RANK, strategy="fsdp",
                              device="cpu", progress="off", optimizer={"lr": 0.01},
                              checkpoint={"every_n_steps": 2})
        log = StepLog(model, Path(records) / f"rank{rank}-attempt{attempt}.jsonl",
                      int(hold_at_step) if attempt == 0 else 0)
        trainer = Trainer(model, data(), None, config, task="binary", callbacks=[log],
                          checkpoint_dir=checkpoints, resume=True)
        trainer.fit()
        if rank == 0:
            resumed = trainer.checkpointing.resumed_from
            (Path(records) / f"resumed-{attempt}.json").write_text(
                json.dumps({"step": resumed.step if resumed else None}))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def launch_node(checkpoints: Path, records: Path, hold_at_step: int, port: int, job: str,
                log: Path) -> subprocess.Popen:
    """One torchrun agent of the elastic job (`--nnodes 1:2`, 2 workers, one restart), in a
    session of its own. The agent whose launch comes first hosts the rendezvous."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parent),
           # restarted workers must not read the dead workers' addresses (pytorch#135712)
           "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1:2",
               "--nproc-per-node", "2", "--max-restarts", "1", "--rdzv-backend", "c10d",
               "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", job, "--rdzv-conf",
               "last_call_timeout=1,keep_alive_interval=1,keep_alive_max_attempt=2",
               __file__, str(checkpoints), str(records), str(hold_at_step)]
    with log.open("w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def kill_node(agent: subprocess.Popen) -> float:
    """SIGKILL a node: its agent first (nothing restarts them), then its workers (sessions of
    their own, found through /proc). Returns the wall-clock time of the kill."""
    workers = [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()
               and _parent(entry) == agent.pid]
    if agent.poll() is None and not workers:
        raise RuntimeError(f"torchrun agent {agent.pid} has no worker processes to kill")
    killed_at = time.time()
    agent.kill()
    for pid in workers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    agent.wait()
    return killed_at


def release(records: Path) -> None:
    """Let the workers holding after HOLD_AT_STEP go on."""
    (records / "released").touch()


def _parent(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def read_records(records: Path) -> dict[int, list[dict]]:
    """Every step line of every worker, by attempt."""
    found: dict[int, list[dict]] = defaultdict(list)
    for path in sorted(records.glob("rank*-attempt*.jsonl")):
        attempt = int(path.stem.rsplit("attempt", 1)[1])
        found[attempt] += [json.loads(line) for line in path.read_text().splitlines() if line]
    return found


def wait_for_steps(records: Path, lines: int, agents: list[subprocess.Popen],
                   timeout: float = 180.0) -> None:
    """Until the workers logged `lines` step lines together (every agent still running)."""
    deadline = time.monotonic() + timeout
    while sum(len(v) for v in read_records(records).values()) < lines:
        if time.monotonic() > deadline or any(a.poll() is not None for a in agents):
            raise RuntimeError(f"the job did not reach {lines} step lines under {records}")
        time.sleep(0.2)


if __name__ == "__main__":
    gc.freeze()  # what the imports made, out of the collector's sight (as in trainforge's)
    main(*sys.argv[1:])
