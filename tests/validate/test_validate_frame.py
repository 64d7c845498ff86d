"""validate_frame: the stage raises or warns as `on_fail` says."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from trainforge.errors import DataValidationError
from trainforge.ingest import read_table
from trainforge.validate import ColumnRule, ContractWarning, SchemaContract, validate_frame

CONTRACT = SchemaContract(columns={"hour": ColumnRule(type="int", min=0, max=23)})
BAD = pd.DataFrame({"hour": [1, 99]})


def test_error_raises_with_source_summary_and_report() -> None:
    with pytest.raises(DataValidationError) as caught:
        validate_frame(BAD, CONTRACT, "error", source="data/tx.parquet")

    message = str(caught.value)
    assert message.startswith("data/tx.parquet: rows break the schema contract")
    assert "hour: max: 1 row, expected <= 23 (first: row 2)" in message
    assert caught.value.report.violations[0].count == 1


def test_the_message_names_the_data_file_first_and_the_contract_file_after(
    tmp_path: Path,
) -> None:
    data = tmp_path / "tx.csv"
    data.write_text("hour\n1\n99\n")
    raw = read_table(str(data))

    with pytest.raises(DataValidationError) as caught:
        validate_frame(raw.frame, CONTRACT, "error", raw.locate, str(data),
                       contract_file="contract.yaml")

    assert str(caught.value).splitlines() == [
        f"{data}: rows break the schema contract in contract.yaml",
        "schema contract: 1 violation in 2 rows",
        "  hour: max: 1 row, expected <= 23 (first: tx.csv line 3 (row 2))",
    ]


def test_warn_emits_a_contract_warning_and_returns_the_report() -> None:
    with pytest.warns(ContractWarning, match="hour: max: 1 row") as record:
        report = validate_frame(BAD, CONTRACT, "warn", locate=lambda i: f"f.csv row {i}")

    assert issubclass(ContractWarning, UserWarning)
    assert str(record[0].message).startswith("data: rows break the schema contract")
    assert report.violations[0].first_rows == ("f.csv row 1",)


def test_a_passing_frame_neither_raises_nor_warns() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = validate_frame(pd.DataFrame({"hour": [0, 23]}), CONTRACT, "error")

    assert report.passed
