"""A command that refuses its spec creates nothing: the session a command opens makes its
database on first use, after the spec was checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainforge.cli import app

TUNING = "tuning={space: {training.optimizer.lr: {type: uniform, low: 0.1, high: 0.01}}}"


@pytest.mark.parametrize("args", [
    ["run", "{spec}", "training.epochs=zero"],
    ["run", "{spec}", "training.epochs=zero", "--nproc-per-node", "2"],
    ["tune", "{spec}", TUNING],
    ["tune", "{spec}", TUNING, "--trials", "2", "--workers", "2"],
])
def test_a_refused_spec_exits_2_and_creates_no_database(
    fraud_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINFORGE_HOME", str(home))
    monkeypatch.delenv("TRAINFORGE_DB", raising=False)
    shown = CliRunner().invoke(app, [arg.replace("{spec}", str(fraud_project / "pipeline.yaml"))
                                     for arg in args])
    assert shown.exit_code == 2, shown.output
    assert "pipeline.yaml" in shown.output
    assert not (home / "trainforge.db").exists()
