"""The console script as a user runs it: real processes, stdout piped (so plain text)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import trainforge

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, cwd=cwd,
                          env=os.environ.copy(), timeout=300)


def test_version_and_help():
    version = cli("--version")
    assert version.returncode == 0 and version.stdout == f"trainforge {trainforge.__version__}\n"
    shown = cli("--help")
    assert shown.returncode == 0
    assert "Turn a declared training pipeline (a YAML spec) into tracked" in shown.stdout
    assert "Typer" not in shown.stdout and "Exit codes: 0 done" in shown.stdout


def test_validate_accepts_the_example_spec(fraud_project):
    result = cli("validate", str(fraud_project / "pipeline.yaml"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("pipeline.yaml: valid")


def test_validate_names_the_field_path_of_a_typo_and_exits_non_zero(fraud_project):
    spec = fraud_project / "pipeline.yaml"
    spec.write_text(spec.read_text().replace("  batch_size: 512", "  batch_sise: 512"))
    result = cli("validate", str(spec))
    assert result.returncode == 2
    assert f"{spec}: training.batch_sise: unknown key; did you mean 'batch_size'?" in result.stderr


def test_validate_json_lists_problems(fraud_project):
    result = cli("validate", str(fraud_project / "pipeline.yaml"), "training.epochs=zero", "--json")
    assert result.returncode == 2
    [problem] = json.loads(result.stdout)["problems"]
    assert "training.epochs: expected an integer > 0, got the text 'zero'" in problem


@pytest.mark.slow
def test_run_then_list_and_show_runs_and_models(fraud_project):
    result = cli("run", str(fraud_project / "pipeline.yaml"), "training.epochs=1")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^  model_version +fraud_detector/1$", result.stdout, re.M)
    assert re.search(r"^  stage +staging$", result.stdout, re.M)
    assert re.search(r"^  test_roc_auc +0\.\d+$", result.stdout, re.M)
    assert "trainforge models list" in result.stdout

    runs = json.loads(cli("runs", "list", "--json").stdout)
    assert [(r["experiment"], r["status"], r["model_version"]) for r in runs] == [
        ("fraud", "completed", "fraud_detector/1")]
    run_id = runs[0]["run_id"]
    assert runs[0]["metrics"]["test_roc_auc"] > 0.7

    listing = [line.split() for line in cli("runs", "list").stdout.splitlines()]
    assert listing[0][:6] == ["run_id", "experiment", "status", "started", "seconds",
                              "test_roc_auc"]
    assert listing[1][0] == run_id and float(listing[1][5]) == pytest.approx(
        runs[0]["metrics"]["test_roc_auc"], abs=1e-4)
    assert "─" not in str(listing)  # plain text when piped, no box drawing

    shown = json.loads(cli("runs", "show", run_id, "--json").stdout)
    assert shown["params"]["training"]["epochs"] == 1 and shown["data_version"]

    models = json.loads(cli("models", "list", "--json").stdout)
    assert [(m["model"], m["version"], m["stage"], m["run_id"]) for m in models] == [
        ("fraud_detector", "1", "staging", run_id)]
    detail = cli("models", "show", "fraud_detector")
    assert detail.returncode == 0 and re.search(rf"^  run_id +{run_id}$", detail.stdout, re.M)


@pytest.mark.slow
def test_failed_run_exits_1_naming_the_run_and_cause(fraud_project):
    result = cli("run", str(fraud_project / "pipeline.yaml"), "data.source=missing/*.parquet")
    assert result.returncode == 1
    assert "failed" in result.stderr and "missing/*.parquet" in result.stderr
    [run] = json.loads(cli("runs", "list", "--json").stdout)
    assert run["status"] == "failed" and "DataNotFound" in run["error"]


@pytest.mark.slow
def test_gate_failure_exits_3(fraud_project):
    result = cli("run", str(fraud_project / "pipeline.yaml"), "training.epochs=1",
                 "evaluation.gates.0.min=0.99999", "--json")
    assert result.returncode == 3
    summary = json.loads(result.stdout)
    assert summary["stage"] == "not registered"
    assert summary["gates"].startswith("failed: test_roc_auc")


@pytest.mark.parametrize("args,message", [
    (("runs", "show", "nope"), "run 'nope' not found"),
    (("models", "show", "nope"), "model 'nope' not found"),
    (("runs", "list", "--experiment", "nope"), "experiment 'nope' not found"),
])
@pytest.mark.slow
def test_unknown_names_are_reported(args, message):
    assert cli("runs", "gc").returncode == 0  # creates the database
    result = cli(*args)
    assert result.returncode == 1 and message in result.stderr
