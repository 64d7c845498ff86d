"""`trainforge checkpoints list / gc` (in-process) over a fraud run that saved many checkpoints."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fraud_fixtures import EXAMPLE
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.config import Settings
from trainforge.entities import RunStatus
from trainforge.storage import open_store

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
# lr 0.05 makes the last epoch's val_loss worse than the one before: the best is not the newest
OVERRIDES = ["training.epochs=3", "training.optimizer.lr=0.05",
             "training.checkpoint.every_n_steps=10", "training.checkpoint.keep_last=null",
             "training.checkpoint.monitor=val_loss"]



def invoke(*args: str):
    return CliRunner().invoke(app, ["checkpoints", *args])


def listed(run_id: str, *flags: str) -> list[dict]:
    result = invoke("list", run_id, "--json", *flags)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, fraud_slice: Path) -> tuple[Path, str]:
    """One pipeline run, made once: the home holding it and its id. The home is kept pristine
    as `<home>.saved`; `run_id` restores it at the same path, where the recorded paths hold."""
    project = tmp_path_factory.mktemp("checkpoints_project")
    shutil.copy(EXAMPLE / "pipeline.yaml", project / "pipeline.yaml")
    shutil.copy(EXAMPLE / "contract.yaml", project / "contract.yaml")
    shutil.copytree(fraud_slice, project / "data")
    home = tmp_path_factory.mktemp("checkpoints_home")
    env = {k: v for k, v in os.environ.items() if k != "TRAINFORGE_DB"}
    result = subprocess.run(
        [TRAINFORGE, "run", str(project / "pipeline.yaml"), *OVERRIDES, "--json"],
        capture_output=True, text=True, env={**env, "TRAINFORGE_HOME": str(home)}, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    shutil.copytree(home, f"{home}.saved")
    return home, json.loads(result.stdout)["run_id"]


@pytest.fixture
def run_id(trained: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The trained run, in a fresh copy of its home (this test may delete checkpoints)."""
    home, run_id = trained
    shutil.rmtree(home)
    shutil.copytree(f"{home}.saved", home)
    monkeypatch.setenv("TRAINFORGE_HOME", str(home))
    return run_id


def on_disk(run_id: str) -> list[int]:
    folder = Path(os.environ["TRAINFORGE_HOME"]) / "artifacts" / run_id / "checkpoints"
    return sorted(int(path.name.removeprefix("step-")) for path in folder.glob("step-*"))


def stub_run(location: str | None = None, policy: dict | None = None,
             status: RunStatus | None = RunStatus.COMPLETED) -> str:
    """A run made directly in the store (no training) that records a checkpoint `location`
    and `policy` when given; left running when `status` is None."""
    system = {"checkpoint": {"location": location, "policy": policy or {}}} if location else {}
    store = open_store(Settings.from_env().database_url.get_secret_value())
    try:
        experiment = store.get_or_create_experiment("stub")
        run = store.create_run(experiment.experiment_id, {}, {}, "unused", system=system)
        if status is not None:
            store.end_run(run.run_id, status)
        return run.run_id
    finally:
        store.close()


@pytest.mark.slow
def test_list_shows_every_saved_step(run_id):
    rows = listed(run_id)
    assert [row["step"] for row in rows] == on_disk(run_id)
    assert len(rows) > 10 and all(row["deleted"] is None for row in rows)
    assert rows[-1]["metrics"]["val_loss"] > 0 and rows[-1]["uri"].endswith("step-0000000099")
    lines = invoke("list", run_id).stdout.splitlines()
    assert lines[0].split() == ["step", "epoch", "created", "deleted", "val_loss", "uri"]
    assert len(lines) == len(rows) + 1 and "─" not in lines[0]
    assert listed(run_id[:8]) == rows  # the short id tables show


def test_gc_keeps_the_newest_and_the_best_and_is_idempotent(run_id):
    rows = listed(run_id)
    newest = rows[-1]["step"]
    ranked = [row for row in rows if row["metrics"].get("val_loss") is not None]
    best = min(ranked, key=lambda row: (row["metrics"]["val_loss"], -row["step"]))["step"]
    assert best != newest

    result = invoke("gc", run_id, "--keep-last", "1", "--keep-best", "1", "--json")
    assert result.exit_code == 0, result.output
    kept = sorted({best, newest})
    assert [d["step"] for d in json.loads(result.stdout)] == [
        row["step"] for row in rows if row["step"] not in kept]
    assert on_disk(run_id) == kept
    assert [row["step"] for row in listed(run_id)] == kept
    every = listed(run_id, "--all")
    assert [row["step"] for row in every] == [row["step"] for row in rows]
    assert [row["step"] for row in every if row["deleted"] is None] == kept

    again = invoke("gc", run_id, "--keep-last", "1", "--keep-best", "1")
    assert again.exit_code == 0 and again.stdout.strip() == "0 checkpoint(s) deleted"
    assert on_disk(run_id) == kept


def test_a_checkpoint_deleted_by_hand_is_shown_deleted(run_id):
    steps = on_disk(run_id)
    shutil.rmtree(Path(listed(run_id)[2]["uri"]))
    assert [row["step"] for row in listed(run_id)] == steps[:2] + steps[3:]
    [gone] = [row for row in listed(run_id, "--all") if row["deleted"] is not None]
    assert gone["step"] == steps[2]


def test_checkpoints_without_records_are_recorded(trained, tmp_path):
    home, run_id = trained
    copy = shutil.copytree(Path(f"{home}.saved") / "artifacts" / run_id / "checkpoints",
                           tmp_path / "checkpoints")
    policy = {"monitor": "val_loss"}
    stub = stub_run(str(copy), policy)
    rows = listed(stub)
    assert [row["step"] for row in rows] == sorted(
        int(path.name.removeprefix("step-")) for path in copy.glob("step-*"))
    assert rows[-1]["metrics"]["val_loss"] > 0


def test_an_unknown_run_is_named():
    open_store(Settings.from_env().database_url.get_secret_value()).close()
    for args in (["list", "nope"], ["gc", "nope", "--keep-last", "1"]):
        result = invoke(*args)
        assert result.exit_code == 1 and "run 'nope' not found" in result.stderr


def test_a_run_without_checkpoints_is_named():
    stub = stub_run()
    result = invoke("list", stub)
    assert result.exit_code == 1
    assert f"run {stub} has no checkpoint location" in result.stderr


def test_keep_best_needs_a_monitor(tmp_path):
    stub = stub_run(str(tmp_path))
    result = invoke("gc", stub, "--keep-last", "1", "--keep-best", "1")
    assert result.exit_code == 1
    assert "keep_best needs a monitor metric" in result.stderr


def test_a_negative_keep_last_exits_2():
    result = invoke("gc", "nope", "--keep-last", "-1")
    assert result.exit_code == 2 and "--keep-last" in result.stderr


def test_gc_of_a_running_run_needs_force(tmp_path):
    stub = stub_run(str(tmp_path), status=None)
    refused = invoke("gc", stub, "--keep-last", "1")
    assert refused.exit_code == 1 and f"run {stub} is running" in refused.stderr
    forced = invoke("gc", stub, "--keep-last", "1", "--force")
    assert forced.exit_code == 0 and "0 checkpoint(s) deleted" in forced.stdout
