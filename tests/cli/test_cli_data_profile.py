"""`trainforge data profile` and `trainforge data drift` (in-process): stored profiles, one
new day profiled alone, drift against a version or a source, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from trainforge.cli import app


def invoke(*args: str):
    return CliRunner().invoke(app, ["data", *args])


def _day(folder: Path, day: int, shift: float = 0.0) -> None:
    rng = np.random.default_rng(day)
    folder.mkdir(exist_ok=True)
    pd.DataFrame({"amount": rng.normal(50 + shift, 5, 2000),
                  "kind": rng.choice(["a", "b"], 2000)}).to_parquet(
        folder / f"day-{day:02d}.parquet")


def test_profile_stores_and_profiles_a_new_day_alone(tmp_path: Path) -> None:
    for day in range(3):
        _day(tmp_path / "data", day)

    first = json.loads(invoke("profile", str(tmp_path / "data"), "--json").stdout)
    _day(tmp_path / "data", 3)
    grown = json.loads(invoke("profile", str(tmp_path / "data"), "--json").stdout)
    table = invoke("profile", str(tmp_path / "data"))

    assert (first["files_profiled"], grown["files_profiled"]) == (3, 1)
    assert grown["rows"] == 8000 and grown["columns"]["amount"]["count"] == 8000
    assert grown["columns"]["kind"]["distinct"] == 2
    assert table.exit_code == 0 and "amount" in table.stdout and "0 profiled now" in table.stdout


def test_drift_against_a_snapshot_or_a_source(tmp_path: Path) -> None:
    for day in range(2):
        _day(tmp_path / "base", day)
        _day(tmp_path / "same", day + 10)
        _day(tmp_path / "moved", day, shift=10)
    assert invoke("snapshot", str(tmp_path / "base"), "--name", "base").exit_code == 0
    assert invoke("profile", str(tmp_path / "base")).exit_code == 0

    same = invoke("drift", str(tmp_path / "same"), "--against", "base")
    moved = invoke("drift", str(tmp_path / "moved"), "--against", str(tmp_path / "base"),
                   "--json")

    assert same.exit_code == 0 and "no drift" in same.stdout
    assert "against base (base@1 " in same.stdout  # by name and number, then the id's start
    assert moved.exit_code == 4
    report = json.loads(moved.stdout)
    assert [c["column"] for c in report["columns"] if c["drifted"]] == ["amount"]


def test_a_version_without_a_profile_and_a_missing_source_exit_1(tmp_path: Path) -> None:
    _day(tmp_path / "base", 0)
    assert invoke("snapshot", str(tmp_path / "base"), "--name", "base").exit_code == 0

    unprofiled = invoke("drift", str(tmp_path / "base"), "--against", "base")
    missing = invoke("profile", str(tmp_path / "none-*.parquet"))
    unknown = invoke("drift", str(tmp_path / "base"), "--against", "base@v3")

    assert unprofiled.exit_code == 1 and "has no stored profile" in unprofiled.stderr
    assert missing.exit_code == 1 and "matches no file" in missing.stderr
    assert unknown.exit_code == 1
    assert "no version base@v3 (versions: base@1, base@latest)" in unknown.stderr
