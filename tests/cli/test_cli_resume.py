"""`trainforge run` stopped by SIGTERM or SIGKILL, then continued: `--resume RUN_ID` and
`training.checkpoint.resume: auto` carry on the same run, with every step logged once."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from home import home_store

from trainforge.config import Settings
from trainforge.entities import RunStatus
from trainforge.storage import open_store

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
# 24,000 rows, 70% for training, batch 512: 33 steps per epoch
SETTINGS = ["training.epochs=3", "training.deterministic=true",
            "training.checkpoint.every_n_steps=10", "training.checkpoint.keep_last=2"]
EXIT_PREEMPTED = 75



def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, timeout=300)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([TRAINFORGE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def await_checkpoint(process: subprocess.Popen, step: int) -> str:
    """Wait until some run has a committed checkpoint of `step`; return that run's id."""
    deadline = time.monotonic() + 120
    artifacts = Path(Settings.from_env().artifact_root)
    while time.monotonic() < deadline:
        found = list(artifacts.glob(f"*/checkpoints/step-{step:010d}/MANIFEST.json"))
        if found:
            return found[0].parents[2].name
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    raise AssertionError(f"no checkpoint of step {step} within 120 s")


def loss_series(run_id: str) -> list[tuple[int, str]]:
    store = home_store()
    try:
        history = store.get_metric_history(run_id, "train_loss").items
        return [(p.step, p.value.hex()) for p in history]
    finally:
        store.close()


@pytest.mark.slow
def test_sigterm_preempts_and_resume_continues_the_same_run_exactly(fraud_project):
    spec = str(fraud_project / "pipeline.yaml")
    reference = cli("run", spec, *SETTINGS, "--json")
    assert reference.returncode == 0, reference.stderr
    reference_id = json.loads(reference.stdout)["run_id"]

    process = start("run", spec, *SETTINGS)
    run_id = await_checkpoint(process, 20)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == EXIT_PREEMPTED, stderr
    assert f"run {run_id} preempted by SIGTERM after step" in stderr
    hint = stderr.split("continue it with: ", 1)[1].splitlines()[0]
    assert hint == shlex.join(["trainforge", "run", spec, *SETTINGS, "--resume", run_id])
    store = home_store()
    stopped = store.get_run(run_id)
    assert stopped.status is RunStatus.PREEMPTED
    preempted_at = int(stopped.error.split("after step ")[1].split()[0])
    assert preempted_at in [c.step for c in store.list_checkpoints(run_id).items]
    store.close()

    resumed = cli(*shlex.split(hint)[1:], "--json")  # the hint, run as printed
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["run_id"] == run_id
    assert loss_series(run_id) == loss_series(reference_id)
    assert [step for step, _ in loss_series(run_id)] == list(range(1, 100))
    runs = json.loads(cli("runs", "list", "--json").stdout)
    assert sorted((r["run_id"], r["status"]) for r in runs) == sorted(
        [(run_id, "completed"), (reference_id, "completed")])


@pytest.mark.slow
def test_resume_auto_continues_a_killed_run_and_then_starts_new_ones(fraud_project):
    spec = str(fraud_project / "pipeline.yaml")
    auto = [*SETTINGS, "training.checkpoint.resume=auto"]
    process = start("run", spec, *auto)
    run_id = await_checkpoint(process, 10)
    process.kill()  # SIGKILL: the run stays `running`, its process gone
    process.wait(timeout=30)
    store = home_store()
    assert store.get_run(run_id).status is RunStatus.RUNNING

    other_spec = cli("run", spec, *auto, "training.seed=1", "--json")  # another spec: new run
    assert other_spec.returncode == 0, other_spec.stderr
    assert json.loads(other_spec.stdout)["run_id"] != run_id

    continued = cli("run", spec, *auto, "--json")
    assert continued.returncode == 0, continued.stderr
    assert json.loads(continued.stdout)["run_id"] == run_id
    assert [step for step, _ in loss_series(run_id)] == list(range(1, 100))
    assert store.get_run(run_id).status is RunStatus.COMPLETED

    fresh = cli("run", spec, *auto, "--json")  # nothing left to continue: a new run
    assert json.loads(fresh.stdout)["run_id"] != run_id
    store.close()


@pytest.mark.slow
def test_resume_refuses_unknown_completed_and_live_runs(fraud_project, tmp_path):
    spec = str(fraud_project / "pipeline.yaml")
    unknown = cli("run", spec, "--resume", "nope")
    assert unknown.returncode == 2 and "run 'nope' not found" in unknown.stderr

    done = cli("run", spec, "training.epochs=1", "--json")
    run_id = json.loads(done.stdout)["run_id"]
    again = cli("run", spec, "training.epochs=1", "--resume", run_id)
    assert again.returncode == 2
    assert f"run {run_id} has completed; there is nothing to resume" in again.stderr

    store = open_store(Settings.from_env().database_url.get_secret_value())
    store.reopen_run(run_id)  # as if a process on this host were still running it
    store.set_system(run_id, {"process": {"host": socket.gethostname(), "pid": os.getpid()}})
    store.close()
    live = cli("run", spec, "training.epochs=1", "--resume", run_id)
    assert live.returncode == 2
    assert f"run {run_id} is still running (pid {os.getpid()} on" in live.stderr


@pytest.mark.slow
def test_a_resume_with_another_spec_is_refused_listing_the_changes(fraud_project):
    spec = str(fraud_project / "pipeline.yaml")
    done = cli("run", spec, "training.epochs=1", "training.log_every_n_steps=1", "--json")
    run_id = json.loads(done.stdout)["run_id"]
    store = home_store()
    store.end_run(run_id, RunStatus.FAILED, "killed")  # as if killed after its last checkpoint
    store.close()

    file_values = cli("run", spec, "--resume", run_id)  # the file's epochs and cadence
    assert file_values.returncode == 2, file_values.stderr
    assert f"run {run_id} was started with another spec" in file_values.stderr
    assert "training.epochs: recorded 1, given 4" in file_values.stderr
    assert "training.log_every_n_steps: recorded 1, given 1" not in file_values.stderr
    assert "start a new run" in file_values.stderr

    cadence = cli("run", spec, "training.epochs=1", "training.log_every_n_steps=5",
                  "--resume", run_id)
    assert cadence.returncode == 2
    assert "training.log_every_n_steps: recorded 1, given 5" in cadence.stderr
    assert "--allow-neutral-changes" in cadence.stderr
    accepted = cli("run", spec, "training.epochs=1", "training.log_every_n_steps=5",
                   "--resume", run_id, "--allow-neutral-changes", "--json")
    assert accepted.returncode == 0, accepted.stderr
    store = home_store()
    run = store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.system["resume"] == {"changes": [["training.log_every_n_steps", 1, 5]]}
    store.close()


@pytest.mark.slow
def test_a_half_written_checkpoint_is_reported_once_on_resume(fraud_project):
    spec = str(fraud_project / "pipeline.yaml")
    settings = ["training.epochs=1", "training.checkpoint.every_n_steps=10"]
    done = cli("run", spec, *settings, "--json")
    run_id = json.loads(done.stdout)["run_id"]
    # what `kill -9` in the middle of a save leaves: the newest step folder, without a manifest
    torn = Path(Settings.from_env().artifact_root) / run_id / "checkpoints" / "step-0000099999"
    torn.mkdir()
    (torn / "tensors.safetensors").write_bytes(b"partial")

    for flags in ([], ["--json"]):
        store = home_store()
        store.end_run(run_id, RunStatus.FAILED, "killed")  # as if killed after its checkpoint
        store.close()
        resumed = cli("run", spec, *settings, "--resume", run_id, *flags)
        assert resumed.returncode == 0, resumed.stderr
        warned = [line for line in resumed.stderr.splitlines() if "checkpoint skipped" in line]
        assert warned == [f"warning: {torn}: no MANIFEST.json (an interrupted save or "
                          "deletion); checkpoint skipped"]
