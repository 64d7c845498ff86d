"""A torchrun job interrupted mid-training ends as an uninterrupted run of the same command
does: one run, completed, the same training loss at every step, each step once.

- a worker killed: `trainforge run --nproc-per-node 2 --max-restarts 1` restarts the workers
  and they resume from the run's newest checkpoint;
- the launcher sent SIGTERM (a preemption): the workers checkpoint at the next step, the run
  ends `preempted`, the command exits 75, and `--resume RUN_ID` finishes it.

Each interrupted job is compared with an uninterrupted job of the same command, launched once per
strategy for the module's tests; every job has a TRAINFORGE_HOME of its own.
"""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fraud_fixtures import copy_fraud_project

from trainforge.entities import RunStatus
from trainforge.storage import SqlStore

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
STEPS = 132  # 2 epochs of 66 steps: 16,800 training rows in global batches of 2 x 128


def launch(project: Path, home: Path, *extra: str, strategy: str = "ddp") -> subprocess.Popen:
    command = [TRAINFORGE, "run", str(project / "pipeline.yaml"), "--nproc-per-node", "2",
               "--max-restarts", "1", "--json", f"training.strategy={strategy}",
               "training.epochs=2", "training.batch_size=128", "training.deterministic=true",
               "training.checkpoint.every_n_steps=10", *extra]
    env = {**os.environ, "TRAINFORGE_HOME": str(home), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def finish(launcher: subprocess.Popen) -> tuple[dict, str]:
    """The launcher's JSON summary and its stderr, once it exited 0."""
    out, err = launcher.communicate(timeout=300)
    assert launcher.returncode == 0, err[-3000:]
    return json.loads(out), err


def first_checkpoint(store: SqlStore, launcher: subprocess.Popen) -> str:
    """The id of the store's run, once it has a checkpoint."""
    deadline = time.monotonic() + 120
    while launcher.poll() is None and time.monotonic() < deadline:
        runs = store.list_runs().items
        if runs and store.list_checkpoints(runs[0].run_id).items:
            return runs[0].run_id
        time.sleep(0.05)
    pytest.fail("the run saved no checkpoint while its launcher ran")


def worker_pid(home: Path, rank: int) -> int | None:
    """The torchrun worker of `rank` of the job recording in `home`, found in /proc (torchrun
    prints no pids)."""
    wanted = {f"RANK={rank}".encode(), f"TRAINFORGE_HOME={home}".encode()}
    for proc in Path("/proc").iterdir():
        try:
            if (not proc.name.isdigit() or b"trainforge.orchestration._torchrun_step"
                    not in (proc / "cmdline").read_bytes()):
                continue
            environ = set((proc / "environ").read_bytes().split(b"\0"))
        except OSError:  # ended meanwhile, or another user's
            continue
        if wanted <= environ:
            return int(proc.name)
    return None


def train_loss(store: SqlStore, run_id: str) -> list[tuple[int, str]]:
    return [(p.step, p.value.hex()) for p in store.get_metric_history(run_id, "train_loss").items]


def store_of(home: Path) -> SqlStore:
    """The store of `home`, created and migrated here, before a launcher opens it."""
    return SqlStore(f"sqlite:///{home / 'trainforge.db'}")


Losses = Callable[[str], list[tuple[int, str]]]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory, fraud_slice: Path) -> Losses:
    """The training loss series of an uninterrupted job, by strategy: each launched once for
    the module, in a project (the same spec and data) and a home of its own."""
    root = tmp_path_factory.mktemp("uninterrupted")
    project = copy_fraud_project(root / "project", fraud_slice)
    series: dict[str, list[tuple[int, str]]] = {}

    def losses(strategy: str) -> list[tuple[int, str]]:
        if strategy not in series:
            store = store_of(root / strategy)
            summary, _ = finish(launch(project, root / strategy, strategy=strategy))
            series[strategy] = train_loss(store, summary["run_id"])
        return series[strategy]

    return losses


def assert_same_losses(store: SqlStore, run_id: str, reference: list[tuple[int, str]]) -> None:
    """The interrupted run logged every step once, with the uninterrupted run's losses."""
    series = train_loss(store, run_id)
    assert [step for step, _ in series] == list(range(1, STEPS + 1))
    assert series == reference


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_a_killed_worker_restarts_and_the_run_ends_as_an_uninterrupted_one(fraud_project, tmp_path,
                                                                          strategy, uninterrupted):
    home = tmp_path / "home"
    store = store_of(home)
    killed = launch(fraud_project, home, strategy=strategy)
    run_id = first_checkpoint(store, killed)
    pid = worker_pid(home, rank=1)
    assert pid is not None, "no worker of rank 1 found in /proc"
    os.kill(pid, signal.SIGKILL)
    summary, log = finish(killed)

    assert "resumed from the checkpoint of step" in log  # by the restarted workers
    [run] = store.list_runs().items
    assert run.run_id == summary["run_id"] == run_id and run.status is RunStatus.COMPLETED
    assert_same_losses(store, run_id, uninterrupted(strategy))


@pytest.mark.slow
def test_sigterm_to_the_launcher_preempts_the_job_and_resume_finishes_it(fraud_project, tmp_path,
                                                                         uninterrupted):
    home = tmp_path / "home"
    store = store_of(home)
    preempted = launch(fraud_project, home)
    run_id = first_checkpoint(store, preempted)
    preempted.send_signal(signal.SIGTERM)
    _, err = preempted.communicate(timeout=120)
    assert preempted.returncode == 75, err[-3000:]
    assert f"--resume {run_id}" in err
    run = store.get_run(run_id)
    assert run.status is RunStatus.PREEMPTED and run.error.startswith("preempted by SIGTERM")

    resumed = subprocess.Popen(  # by its id alone: the recorded spec, overrides and launch
        [TRAINFORGE, "resume", run_id, "--json"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TRAINFORGE_HOME": str(home), "OMP_NUM_THREADS": "1"})
    summary, log = finish(resumed)
    assert summary["run_id"] == run_id and "resumed from the checkpoint of step" in log
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    assert_same_losses(store, run_id, uninterrupted("ddp"))
