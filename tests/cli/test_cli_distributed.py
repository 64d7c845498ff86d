"""`trainforge run SPEC --nproc-per-node 2`: one tracked run over two torchrun workers (gloo, CPU).

What the runs became is read back from the store directly (the listing commands have their own
tests), to spend the time on the launches.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.entities import RunStatus
from trainforge.errors import SpecError
from trainforge.pipeline import Launch, launch_pipeline
from trainforge.storage import open_store

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)


@pytest.mark.slow
def test_two_workers_make_one_completed_run_and_one_model_version(fraud_project):
    result = cli("run", str(fraud_project / "pipeline.yaml"), "--nproc-per-node", "2",
                 "training.strategy=ddp", "training.epochs=2", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["status"] == "completed" and summary["model_version"] == "fraud_detector/1"

    store = open_store()
    [run] = store.list_runs()
    assert run.run_id == summary["run_id"] and run.status is RunStatus.COMPLETED
    assert run.tags["distributed"]["nproc_per_node"] == 2
    assert (run.tags["trainer"]["world_size"], run.tags["trainer"]["strategy"]) == (2, "ddp")
    assert run.metrics["test_roc_auc"] > 0.7
    assert store.get_metric_history(run.run_id, "train_loss")
    [version] = store.list_model_versions()
    assert (version.model_name, version.version, version.run_id) == (
        "fraud_detector", "1", run.run_id)


@pytest.mark.slow
def test_a_failing_worker_fails_the_run_with_its_error(fraud_project):
    result = cli("run", str(fraud_project / "pipeline.yaml"), "--nproc-per-node", "2",
                 "training.strategy=ddp", "data.source=missing/*.parquet")
    assert result.returncode == 1
    assert "failed" in result.stderr and "missing/*.parquet" in result.stderr
    [run] = open_store().list_runs()
    assert run.status is RunStatus.FAILED
    assert "worker rank" in run.error and "DataNotFound" in run.error


def test_several_processes_need_a_distributed_strategy(fraud_project):
    with pytest.raises(SpecError, match="training.strategy: 'single' cannot use 2 processes"):
        launch_pipeline(fraud_project / "pipeline.yaml", [], Launch(nproc_per_node=2))
    assert open_store().list_runs() == []


@pytest.mark.parametrize("flags,message", [
    (["--nnodes", "2"], "need --nproc-per-node"),
    (["--nproc-per-node", "1", "--nnodes", "2", "training.strategy=ddp"],
     "--nnodes > 1 needs --rdzv-endpoint"),
])
def test_launch_flags_are_checked_before_any_run(fraud_project, flags, message):
    result = CliRunner().invoke(app, ["run", str(fraud_project / "pipeline.yaml"), *flags])
    assert result.exit_code == 2 and message in result.output
    assert open_store().list_runs() == []
