"""ContractChecker over Arrow batches: the rules that span batches (unique, null fraction, row
count, freshness), regex, the mask of rows to quarantine, and bad contracts naming the field."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainforge.errors import SpecError
from trainforge.ingest import iter_batches
from trainforge.validate import (
    ContractChecker,
    QuarantineWriter,
    SchemaContract,
    ValidationReport,
    Violation,
    load_contract,
)

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)


def _check(contract: dict, *batches: dict, now: datetime = NOW) -> tuple[ValidationReport,
                                                                       list[np.ndarray]]:
    checker = ContractChecker(SchemaContract.model_validate(contract), now=now)
    masks, offset = [], 0
    for columns in batches:
        batch = pa.RecordBatch.from_pydict(columns)
        masks.append(checker.update(batch, lambda row, base=offset: f"row {base + row + 1}"))
        offset += batch.num_rows
    return checker.finish(), masks


def _rule(report: ValidationReport, rule: str) -> Violation:
    (found,) = [v for v in report.violations if v.rule == rule]
    return found


def test_unique_finds_repeats_within_and_across_batches() -> None:
    report, masks = _check({"columns": {"id": {"type": "string", "unique": True,
                                               "nullable": True}}},
                           {"id": ["a", "b", "a", None]}, {"id": ["c", "b", None, "d"]})

    violation = _rule(report, "unique")
    assert (violation.count, violation.first_rows) == (2, ("row 3", "row 6"))
    assert [m.tolist() for m in masks] == [[False, False, True, False],
                                           [False, True, False, False]]


def test_regex_must_match_the_whole_text() -> None:
    report, masks = _check({"columns": {"code": {"type": "string", "regex": "tx-[0-9]+"}}},
                           {"code": ["tx-1", "tx-12a", "xtx-3", "tx-44"]})

    violation = _rule(report, "regex")
    assert violation.first_rows == ("row 2", "row 3")
    assert violation.expected == "text matching 'tx-[0-9]+' whole"
    assert masks[0].tolist() == [False, True, True, False]


def test_max_null_fraction_is_judged_over_all_batches() -> None:
    contract = {"columns": {"device": {"type": "string", "max_null_fraction": 0.25}}}
    ok, _ = _check(contract, {"device": ["a", None, "b", "c"]}, {"device": ["d", "e", "f", None]})
    over, masks = _check(contract, {"device": ["a", "b"]}, {"device": [None, None, "c"]})

    assert ok.passed
    violation = _rule(over, "max null fraction")
    assert (violation.count, violation.first_rows) == (2, ("row 3", "row 4"))
    assert violation.expected == "at most 25.00% nulls (max_null_fraction 0.25), found 40.00%"
    assert not any(m.any() for m in masks), "a fraction is no row's fault: nothing quarantined"


def test_row_count_range() -> None:
    contract = {"columns": {"x": {"type": "int"}}, "rows": {"min": 3, "max": 4}}

    assert _check(contract, {"x": [1, 2]}, {"x": [3]})[0].passed
    few = _rule(_check(contract, {"x": [1, 2]})[0], "rows")
    many = _rule(_check(contract, {"x": [1, 2, 3]}, {"x": [4, 5]})[0], "rows")
    assert (few.column, few.count, few.expected) == ("(table)", 2, "between 3 and 4 rows")
    assert many.count == 5


def test_freshness_of_the_newest_timestamp_or_iso_text() -> None:
    contract = {"columns": {"ts": {"type": "datetime"}},
                "freshness": {"column": "ts", "max_age": "36h"}}
    recent = [NOW - timedelta(days=3), NOW - timedelta(hours=30)]
    stale = [NOW - timedelta(days=3), NOW - timedelta(days=2)]

    assert _check(contract, {"ts": recent[:1]}, {"ts": recent[1:]})[0].passed
    violation = _rule(_check(contract, {"ts": stale})[0], "freshness")
    assert violation.first_rows == ("row 2",)
    assert "it is 2026-11-21T12:00:00+00:00, 2.0 days old" in violation.expected
    text = _check(contract, {"ts": ["2026-11-23T01:00:00+02:00", "2026-11-20"]})[0]
    assert text.passed


def test_nulls_and_nan_are_nulls_and_text_numbers_are_numbers() -> None:
    report, _ = _check({"columns": {"a": {"type": "float", "min": 0},
                                    "n": {"type": "int", "max": 10}}},
                       {"a": [1.0, float("nan"), None], "n": ["3", " 12 ", "x"]})

    assert [(v.column, v.rule, v.first_rows) for v in report.violations] == [
        ("a", "not null", ("row 2", "row 3")), ("n", "type", ("row 3",)),
        ("n", "max", ("row 2",))]


def test_batches_of_a_source_are_located_in_their_files(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id,amount\n1,5\n2,-1\n")
    pq.write_table(pa.table({"id": [3, 2], "amount": [7.0, 8.0]}), tmp_path / "b.parquet")
    contract = SchemaContract.model_validate(
        {"columns": {"id": {"type": "int", "unique": True}, "amount": {"type": "float",
                                                                        "min": 0}}})
    checker = ContractChecker(contract)
    for part in iter_batches(str(tmp_path)):
        checker.update(part.batch, part.locate)

    report = checker.finish()

    assert [(v.column, v.rule, v.first_rows) for v in report.violations] == [
        ("id", "unique", ("b.parquet row 2",)), ("amount", "min", ("a.csv line 3 (row 2)",))]


def test_quarantine_writes_exactly_the_offending_rows_with_their_place(tmp_path: Path) -> None:
    contract = SchemaContract.model_validate({"columns": {"x": {"type": "int", "min": 0}}})
    checker = ContractChecker(contract)
    writer = QuarantineWriter(tmp_path / "out" / "quarantine.parquet")
    for offset, values in ((0, [1, -2, 3]), (3, [-4, 5])):
        batch = pa.RecordBatch.from_pydict({"x": values})
        where = lambda row, base=offset: f"f.csv row {base + row + 1}"  # noqa: E731
        writer.write(batch, checker.update(batch, where), where)

    path = writer.close()

    assert path is not None and writer.rows == 2
    assert pq.read_table(path).to_pydict() == {"x": [-2, -4],
                                               "_source_row": ["f.csv row 2", "f.csv row 4"]}
    assert [p.name for p in path.parent.iterdir()] == ["quarantine.parquet"]
    assert QuarantineWriter(tmp_path / "none.parquet").close() is None


@pytest.mark.parametrize(("text", "message"), [
    ("columns: {a: {type: string, regex: '(unclosed'}}", r"columns\.a\.regex: .*RE2"),
    ("columns: {a: {type: int, regex: 'x'}}", r"columns\.a: .*regex applies to string"),
    ("columns: {a: {type: string, max_null_fraction: 1.5}}", r"columns\.a\.max_null_fraction"),
    ("columns: {a: {type: string, nullable: false, max_null_fraction: 0.1}}",
     r"columns\.a: .*max_null_fraction allows nulls"),
    ("columns: {a: {type: int}}\nrows: {min: 5, max: 2}", r"rows: .*min \(5\) is greater"),
    ("columns: {a: {type: datetime}}\nfreshness: {column: a, max_age: soon}",
     r"freshness\.max_age: .*expected a duration such as 90m"),
    ("columns: {a: {type: int}}\nfreshness: {column: a, max_age: 1d}",
     r"freshness\.column 'a': expected a datetime column"),
    ("columns: {a: {type: string, unique: maybe}}", r"columns\.a\.unique"),
])
def test_bad_contracts_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "contract.yaml"
    path.write_text(text)

    with pytest.raises(SpecError, match=message):
        load_contract(path)
