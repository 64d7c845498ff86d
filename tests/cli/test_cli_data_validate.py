"""`trainforge data validate SOURCE --contract FILE` (in-process): streamed, exit codes, JSON,
quarantine."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from trainforge.cli import app

CONTRACT = "columns:\n  id: {type: int, unique: true}\n  amount: {type: float, min: 0}\n"


def invoke(*args: str):
    return CliRunner().invoke(app, ["data", "validate", *args])


def _project(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("id,amount\n1,5\n2,-1\n")
    (tmp_path / "data" / "b.jsonl").write_text('{"id": 3, "amount": 1}\n{"id": 1, "amount": 2}\n')
    (tmp_path / "contract.yaml").write_text(CONTRACT)
    return tmp_path / "data", tmp_path / "contract.yaml"


def test_a_broken_contract_exits_1_naming_rules_and_rows(tmp_path: Path) -> None:
    data, contract = _project(tmp_path)

    result = invoke(str(data), "--contract", str(contract))

    assert result.exit_code == 1
    assert "id: unique: 1 row, expected each value once (unique is true) (first: b.jsonl line 2 " \
        "(row 2))" in result.stdout
    assert "amount: min: 1 row, expected >= 0 (first: a.csv line 3 (row 2))" in result.stdout


def test_quarantine_writes_the_rows_and_json_reports_them(tmp_path: Path) -> None:
    data, contract = _project(tmp_path)
    out = tmp_path / "bad.parquet"

    result = invoke(str(data), "--contract", str(contract), "--on-fail", "quarantine",
                    "--quarantine", str(out), "--json")

    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert (report["passed"], report["quarantined"], report["quarantine"]) == (False, 2, str(out))
    assert pq.read_table(out).column("_source_row").to_pylist() == [
        "a.csv line 3 (row 2)", "b.jsonl line 2 (row 2)"]


def test_warn_exits_0_and_a_clean_source_passes(tmp_path: Path) -> None:
    data, contract = _project(tmp_path)
    (tmp_path / "clean.csv").write_text("id,amount\n1,5\n")

    assert invoke(str(data), "--contract", str(contract), "--on-fail", "warn").exit_code == 0
    clean = invoke(str(tmp_path / "clean.csv"), "--contract", str(contract))
    assert clean.exit_code == 0 and "all rules hold on 1 rows" in clean.stdout


def test_bad_inputs_exit_with_the_reason(tmp_path: Path) -> None:
    data, contract = _project(tmp_path)
    (tmp_path / "bad.yaml").write_text("columns: {id: {type: integer}}\n")

    missing = invoke(str(tmp_path / "none-*.csv"), "--contract", str(contract))
    bad_contract = invoke(str(data), "--contract", str(tmp_path / "bad.yaml"))
    no_path = invoke(str(data), "--contract", str(contract), "--on-fail", "quarantine")

    assert missing.exit_code == 1 and "matches no file" in missing.stderr
    assert bad_contract.exit_code == 2 and "columns.id.type" in bad_contract.stderr
    assert no_path.exit_code == 2 and "--quarantine PATH" in no_path.stderr
