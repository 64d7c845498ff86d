"""Every listing command with nothing to list, in each output mode (in-process): a terminal
(rich), piped (plain text) and `--json`. Each exits 0 and says there is nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainforge.cli import _render, app
from trainforge.entities import RunStatus
from trainforge.tracking import default_store

MODES = ["terminal", "piped", "json"]


@pytest.fixture
def empty_store():
    """The default store, created and empty."""
    return default_store()


@pytest.fixture
def two_bare_runs(empty_store, tmp_path: Path) -> list[str]:
    """Two ended runs with the same params, no metrics, and an empty checkpoint location."""
    experiment = empty_store.get_or_create_experiment("bare").experiment_id
    system = {"checkpoint": {"location": str(tmp_path / "checkpoints"), "policy": {}}}
    made = []
    for _ in range(2):
        run = empty_store.create_run(experiment, {"lr": 0.1}, {}, "unused", system=system)
        empty_store.end_run(run.run_id, RunStatus.COMPLETED)
        made.append(run.run_id)
    return made


def invoke(mode: str, monkeypatch: pytest.MonkeyPatch, *args: str):
    monkeypatch.setattr(_render, "is_terminal", lambda: mode == "terminal")
    flags = ["--json"] if mode == "json" else []
    result = CliRunner().invoke(app, [*args, *flags])
    assert result.exit_code == 0, result.output
    return result.stdout


def said(mode: str, stdout: str, message: str) -> None:
    if mode == "json":
        assert json.loads(stdout) == []
    else:
        assert stdout.strip() == message


@pytest.mark.parametrize("mode", MODES)
def test_runs_and_models_list_on_an_empty_database(mode, empty_store, monkeypatch):
    said(mode, invoke(mode, monkeypatch, "runs", "list"), "no runs")
    said(mode, invoke(mode, monkeypatch, "models", "list"), "no model versions")


@pytest.mark.parametrize("mode", MODES)
def test_lists_of_runs_that_have_nothing(mode, two_bare_runs, monkeypatch):
    run_id = two_bare_runs[0]
    said(mode, invoke(mode, monkeypatch, "runs", "list", "--filter", "metrics.auc > 0.5"),
         "no runs match")
    said(mode, invoke(mode, monkeypatch, "runs", "history", run_id, "nope"),
         f"no points of 'nope' in run {run_id}")
    said(mode, invoke(mode, monkeypatch, "checkpoints", "list", run_id),
         f"no checkpoints of run {run_id} (--all shows deleted ones too)")
    said(mode, invoke(mode, monkeypatch, "checkpoints", "list", run_id, "--all"),
         f"no checkpoints of run {run_id}")


@pytest.mark.parametrize("mode", MODES)
def test_compare_of_runs_without_differences_or_metrics(mode, two_bare_runs, monkeypatch):
    stdout = invoke(mode, monkeypatch, "runs", "compare", *two_bare_runs)
    if mode == "json":
        shown = json.loads(stdout)
        assert (shown["params"], shown["metrics"], shown["same_params"]) == ({}, {}, 1)
    else:
        assert stdout.strip() == "0 params differ, 1 equal; no run has metrics"
