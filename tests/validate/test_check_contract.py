"""check_contract: every rule, with counts and the first row locations of each violation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import trainforge.validate as validate
from trainforge.ingest import read_table
from trainforge.validate import ColumnRule, SchemaContract, Violation, check_contract


def _contract(allow_extra: bool = True, **rules: dict) -> SchemaContract:
    return SchemaContract(
        columns={name: ColumnRule(**rule) for name, rule in rules.items()},
        allow_extra_columns=allow_extra,
    )


def _only(report: validate.ValidationReport) -> Violation:
    (violation,) = report.violations
    return violation


def test_public_api() -> None:
    assert validate.__all__ == [
        "ColumnRule", "ContractChecker", "ContractWarning", "FreshnessRule", "QuarantineWriter",
        "RowsRule", "SchemaContract", "ValidationReport", "Violation", "check_contract", "enforce",
        "frame_batches", "load_contract", "quarantine_frame", "validate_frame"]


def test_a_conforming_frame_passes() -> None:
    frame = pd.DataFrame(
        {
            "amount": [0.0, 12.5, 50000.0],
            "merchant_category": ["grocery", "travel", "grocery"],
            "hour": [0, 12, 23],
            "ts": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"]),
            "is_fraud": [0, 1, 0],
            "flag": [True, False, True],
        }
    )
    contract = _contract(
        amount={"type": "float", "min": 0, "max": 50000},
        merchant_category={"type": "string", "allowed": ["grocery", "travel"]},
        hour={"type": "int", "min": 0, "max": 23},
        ts={"type": "datetime"},
        is_fraud={"type": "int", "allowed": [0, 1]},
        flag={"type": "bool"},
    )

    report = check_contract(frame, contract)

    assert report.passed
    assert report.rows_checked == 3
    assert report.summary() == "schema contract: all rules hold on 3 rows"


def test_missing_column_counts_every_row() -> None:
    report = check_contract(
        pd.DataFrame({"a": [1, 2, 3]}), _contract(a={"type": "int"}, b={"type": "int"})
    )

    assert _only(report) == Violation("b", "present", "a column of that name", 3, ())


def test_extra_columns_break_the_contract_only_when_not_allowed() -> None:
    frame = pd.DataFrame({"a": [1, 2], "extra": [3, 4]})

    assert check_contract(frame, _contract(a={"type": "int"})).passed
    violation = _only(check_contract(frame, _contract(False, a={"type": "int"})))
    assert (violation.column, violation.rule, violation.count) == ("extra", "unexpected column", 2)


def test_int_column_holding_fractions() -> None:
    frame = pd.DataFrame({"hour": [1.0, 2.5, np.nan, 4.0, 7.25]})

    violation = _only(check_contract(frame, _contract(hour={"type": "int", "nullable": True})))

    assert violation.rule == "type"
    assert violation.count == 2
    assert violation.first_rows == ("row 2", "row 5")


def test_whole_floats_and_nullable_ints_are_ints() -> None:
    frame = pd.DataFrame(
        {
            "a": [1.0, np.nan, 3.0],
            "b": pd.array([1, None, 3], dtype="Int64"),
        }
    )
    contract = _contract(a={"type": "int", "nullable": True}, b={"type": "int", "nullable": True})

    assert check_contract(frame, contract).passed


def test_text_in_a_numeric_column() -> None:
    frame = pd.DataFrame({"amount": ["1.5", "oops", "3", None, "n/a"]})

    report = check_contract(frame, _contract(amount={"type": "float", "nullable": True, "min": 2}))

    type_rule, min_rule = report.violations
    assert (type_rule.rule, type_rule.count) == ("type", 2)
    assert type_rule.first_rows == ("row 2", "row 5")
    assert (min_rule.rule, min_rule.count, min_rule.first_rows) == ("min", 1, ("row 1",))


@pytest.mark.parametrize(
    ("values", "type_", "bad_rows"),
    [
        ([True, False], "float", ("row 1", "row 2")),
        ([1, 2], "string", ("row 1", "row 2")),
        # an object column mixing Python types is checked as the text of its values
        (pd.Series(["a", 3, None], dtype=object), "int", ("row 1",)),
        (pd.Series([True, "yes", None], dtype=object), "bool", ("row 1", "row 2")),
        ([0, 1], "bool", ("row 1", "row 2")),
        (["2024-01-01", "2024-01-02T10:00:00+02:00", "soon"], "datetime", ("row 3",)),
        ([1.5, 2.5], "datetime", ("row 1", "row 2")),
        (pd.to_datetime(["2024-01-01"]), "int", ("row 1",)),
    ],
)
def test_values_that_do_not_fit_the_type(values: object, type_: str, bad_rows: tuple) -> None:
    frame = pd.DataFrame({"c": values})

    violation = _only(check_contract(frame, _contract(c={"type": type_, "nullable": True})))

    assert violation.rule == "type"
    assert violation.first_rows == bad_rows
    assert violation.count == len(bad_rows)


def test_nulls_when_not_nullable() -> None:
    frame = pd.DataFrame({"a": [1.0, None, 3.0, None], "s": ["x", None, "y", "z"]})

    report = check_contract(frame, _contract(a={"type": "float"}, s={"type": "string"}))

    a_rule, s_rule = report.violations
    assert (a_rule.column, a_rule.rule, a_rule.count, a_rule.first_rows) == (
        "a",
        "not null",
        2,
        ("row 2", "row 4"),
    )
    assert (s_rule.column, s_rule.count) == ("s", 1)
    assert check_contract(frame, _contract(a={"type": "float", "nullable": True})).passed


def test_rows_are_counted_from_one_without_locate() -> None:
    frame = pd.DataFrame({"hour": range(60)})

    violation = _only(check_contract(frame, _contract(hour={"type": "int", "max": 48})))

    assert violation.first_rows[0] == "row 50"


def test_min_and_max_count_rows_and_keep_five_locations() -> None:
    values = np.arange(-10, 30)
    frame = pd.DataFrame({"hour": values})

    report = check_contract(frame, _contract(hour={"type": "int", "min": 0, "max": 23}))

    low, high = report.violations
    assert (low.rule, low.count, low.expected) == ("min", 10, ">= 0")
    assert low.first_rows == tuple(f"row {i}" for i in range(1, 6))
    assert (high.rule, high.count, high.expected) == ("max", 6, "<= 23")
    assert high.first_rows == tuple(f"row {i}" for i in range(35, 40))


def test_bounds_are_written_in_full() -> None:
    frame = pd.DataFrame({"x": [2_000_000.0, 0.1]})

    report = check_contract(frame, _contract(x={"type": "float", "min": 0.25, "max": 1234567}))

    assert [v.expected for v in report.violations] == [">= 0.25", "<= 1234567"]


def test_allowed_values() -> None:
    frame = pd.DataFrame(
        {
            "category": ["grocery", "travel", "casino", None, "crypto"],
            "is_fraud": [0, 1, 2, 1, 0],
        }
    )
    contract = _contract(
        category={"type": "string", "nullable": True, "allowed": ["grocery", "travel"]},
        is_fraud={"type": "int", "allowed": [0, 1]},
    )

    category, fraud = check_contract(frame, contract).violations

    assert (category.rule, category.count) == ("allowed", 2)
    assert category.first_rows == ("row 3", "row 5")
    assert category.expected == "one of ['grocery', 'travel']"
    assert (fraud.column, fraud.count, fraud.first_rows) == ("is_fraud", 1, ("row 3",))


def test_row_locations_come_from_locate_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("amount\n1\n2\n")
    (tmp_path / "b.csv").write_text("amount\n3\n-4\n5\n-6\n")
    data = read_table(str(tmp_path / "*.csv"))

    report = check_contract(data.frame, _contract(amount={"type": "float", "min": 0}), data.locate)

    assert _only(report).first_rows == ("b.csv line 3 (row 2)", "b.csv line 5 (row 4)")


def test_summary_and_dict_describe_each_violation() -> None:
    frame = pd.DataFrame({"hour": [1, 30, 40]})
    report = check_contract(frame, _contract(hour={"type": "int", "max": 23}, day={"type": "int"}))

    assert report.summary().splitlines() == [
        "schema contract: 2 violations in 3 rows",
        "  hour: max: 2 rows, expected <= 23 (first: row 2, row 3)",
        "  day: present: 3 rows, expected a column of that name",
    ]
    data = report.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["passed"] is False
    assert data["violations"][0] == {
        "column": "hour",
        "rule": "max",
        "expected": "<= 23",
        "count": 2,
        "first_rows": ["row 2", "row 3"],
    }


def test_checks_300k_rows_in_several_batches() -> None:
    rng = np.random.default_rng(0)
    n = 300_000
    frame = pd.DataFrame(
        {
            "amount": rng.uniform(-1, 60_000, n),
            "merchant_category": rng.choice(["grocery", "travel", "casino"], n),
            "hour": rng.integers(0, 30, n),
            "ts": pd.date_range("2024-01-01", periods=n, freq="min"),
            "is_fraud": rng.integers(0, 3, n),
        }
    )
    contract = _contract(
        amount={"type": "float", "min": 0, "max": 50000},
        merchant_category={"type": "string", "allowed": ["grocery", "travel"]},
        hour={"type": "int", "min": 0, "max": 23},
        ts={"type": "datetime"},
        is_fraud={"type": "int", "allowed": [0, 1]},
    )

    report = check_contract(frame, contract)

    assert {v.rule for v in report.violations} == {"min", "max", "allowed"}
    hours = next(v for v in report.violations if v.column == "hour")
    assert hours.count == int((frame["hour"] > 23).sum())
    assert report.rows_checked == n
