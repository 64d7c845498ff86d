"""A run records who started it: the session's acting user (`TRAINFORGE_USER`), in its
process entry, beside where it runs."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from home import home_store

from trainforge.pipeline import run_pipeline


def test_a_run_names_the_user_whose_session_started_it(fraud_project: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINFORGE_USER", "alice")
    result = run_pipeline(fraud_project / "pipeline.yaml", ["training.epochs=1",
                                                           "registry=null"])
    process = home_store().get_run(result.run.run_id).system["process"]
    assert (process["user"], process["host"]) == ("alice", socket.gethostname())
