"""Recovery from a lost node: the time from killing one node of a running elastic job to the
first training step after the survivors resumed, against the seed's 5-minute goal and against a
cold restart measured in the same run.

The job is tests/train/elastic_script.py: two torchrun "nodes" of two CPU processes each
(`--nnodes 1:2 --max-restarts 1`, c10d rendezvous on loopback), FSDP with sharded checkpoints
every 2 steps. Every worker holds after step 10; one node is killed there (SIGKILL, agent and
workers) and the others are released: the survivors' collectives fail, their agent re-forms
the group with 2 processes, and the workers resume from the newest checkpoint (resharded
4 -> 2, the same global batch). The cold restart is what a job without elastic restarts gets
at best: a fresh 2-process launch from a copy of the checkpoints taken at the kill, timed from
its start to its first step (no failure to detect, no rendezvous to re-form).
Prints one JSON object:

- `recovery_s`: kill -> first step after resuming; `goal_s` 300 and `within_goal`;
- `cold_restart_s` and `recovery_vs_cold_restart` (recovery_s / cold_restart_s);
- `resumed_from_step`, `world_size_after`, and the machine's `load_average`.

The rendezvous settings are the test's (`last_call_timeout=1`, keep-alive every second, two
missed beats): torchrun's defaults (30 s last call, 3 x 5 s keep-alive) add up to about 45 s.

    .venv/bin/python benchmarks/recovery.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "train"))
import elastic_script as job  # noqa: E402

GOAL_S = 300.0


def lose_a_node(folder: Path) -> tuple[float, int, int, Path]:
    """Run the elastic job, kill one node; (recovery seconds, resumed step, world size after,
    the checkpoints as they were at the kill)."""
    records, checkpoints = folder / "records", folder / "checkpoints"
    records.mkdir()
    port, run = job.free_port(), uuid.uuid4().hex
    first = job.launch_node(checkpoints, records, 10, port, run, folder / "node0.log")
    time.sleep(1)
    second = job.launch_node(checkpoints, records, 10, port, run, folder / "node1.log")
    try:
        job.wait_for_steps(records, 4 * 10, [first, second])
        killed_at = job.kill_node(second)
        job.release(records)
        at_kill = folder / "at-kill"
        shutil.copytree(checkpoints, at_kill)
        if first.wait(timeout=600) != 0:
            raise RuntimeError((folder / "node0.log").read_text()[-4000:])
    finally:
        for agent in (first, second):
            if agent.poll() is None:
                job.kill_node(agent)
    resumed = job.read_records(records)[1]
    step = json.loads((records / "resumed-1.json").read_text())["step"]
    return min(r["t"] for r in resumed) - killed_at, step, resumed[0]["world"], at_kill


def cold_restart(folder: Path, checkpoints: Path) -> float:
    """A fresh 2-process launch resuming `checkpoints`: start -> first step, in seconds."""
    records = folder / "cold-records"
    records.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(job.__file__).parent)}
    started = time.time()
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                    "--nproc-per-node", "2", job.__file__, str(checkpoints), str(records), "0"],
                   check=True, env=env, capture_output=True, timeout=600)
    return min(r["t"] for r in job.read_records(records)[0]) - started


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="trainforge-recovery-") as tmp:
        recovery, step, world, at_kill = lose_a_node(Path(tmp))
        cold = cold_restart(Path(tmp), at_kill)
    print(json.dumps({
        "recovery_s": round(recovery, 2), "goal_s": GOAL_S, "within_goal": recovery <= GOAL_S,
        "cold_restart_s": round(cold, 2), "recovery_vs_cold_restart": round(recovery / cold, 2),
        "resumed_from_step": step, "world_size_after": world,
        "load_average": round(os.getloadavg()[0], 2),
    }, indent=2))


if __name__ == "__main__":
    main()
