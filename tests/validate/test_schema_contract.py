"""load_contract: a YAML schema contract into pydantic models, with errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainforge.errors import SpecError
from trainforge.validate import ColumnRule, SchemaContract, load_contract

GOOD = """\
columns:
  amount: {type: float, nullable: false, min: 0, max: 50000}
  merchant_category: {type: string, allowed: [grocery, travel]}
  hour: {type: int, min: 0, max: 23}
  ts: {type: datetime}
  is_fraud: {type: int, allowed: [0, 1]}
allow_extra_columns: true
"""


def _contract_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "contract.yaml"
    path.write_text(text)
    return path


def test_loads_a_contract(tmp_path: Path) -> None:
    contract = load_contract(_contract_file(tmp_path, GOOD))

    assert list(contract.columns) == ["amount", "merchant_category", "hour", "ts", "is_fraud"]
    assert contract.columns["amount"] == ColumnRule(type="float", min=0, max=50000)
    assert contract.columns["merchant_category"].allowed == ["grocery", "travel"]
    assert contract.columns["is_fraud"].allowed == [0, 1]
    assert contract.columns["ts"].nullable is False
    assert contract.allow_extra_columns is True


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    path = _contract_file(tmp_path, "columns:\n  amount: {type: float\n")

    with pytest.raises(SpecError, match=r"contract\.yaml:\d+:\d+: malformed YAML"):
        load_contract(path)


def test_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="file not found"):
        load_contract(tmp_path / "nope.yaml")


def test_unknown_top_level_key_suggests_the_right_one(tmp_path: Path) -> None:
    path = _contract_file(tmp_path, "columns:\n  a: {type: int}\nallow_extra_column: false\n")

    with pytest.raises(SpecError) as caught:
        load_contract(path)

    assert caught.value.problems == [
        f"{path}: allow_extra_column: unknown key; did you mean 'allow_extra_columns'?"
    ]


def test_unknown_column_rule_key_is_named(tmp_path: Path) -> None:
    path = _contract_file(tmp_path, "columns:\n  a: {type: int, nulable: true}\n")

    with pytest.raises(SpecError, match=r"contract\.yaml: columns\.a\.nulable: unknown key"):
        load_contract(path)


def test_wrong_value_type_names_the_field(tmp_path: Path) -> None:
    path = _contract_file(tmp_path, "columns:\n  amount: {type: float, min: x}\n")

    with pytest.raises(SpecError) as caught:
        load_contract(path)

    assert caught.value.problems == [
        f"{path}: columns.amount.min: expected a number, got the text 'x'"
    ]


def test_unknown_column_type_lists_the_known_ones(tmp_path: Path) -> None:
    path = _contract_file(tmp_path, "columns:\n  amount: {type: flaot}\n")

    with pytest.raises(SpecError, match=r"columns\.amount\.type: expected one of .*'float'"):
        load_contract(path)


def test_missing_type_is_required(tmp_path: Path) -> None:
    path = _contract_file(tmp_path, "columns:\n  amount: {nullable: true}\n")

    with pytest.raises(SpecError, match=r"columns\.amount\.type: required field is missing"):
        load_contract(path)


def test_no_columns_is_an_error(tmp_path: Path) -> None:
    path = _contract_file(tmp_path, "columns: {}\n")

    with pytest.raises(SpecError, match=r"contract\.yaml: columns: expected at least one column"):
        load_contract(path)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("{type: string, min: 0}", "min and max apply to int and float columns"),
        ("{type: int, min: 5, max: 1}", r"min \(5\) is greater than max \(1\)"),
        ("{type: string, allowed: [yes, no]}", "quote text values"),
        ("{type: int, allowed: [0, 0.5]}", "must be int values"),
        ("{type: datetime, allowed: ['2024-01-01']}", "allowed does not apply to datetime"),
    ],
)
def test_inconsistent_rules_are_rejected(tmp_path: Path, rule: str, message: str) -> None:
    path = _contract_file(tmp_path, f"columns:\n  c: {rule}\n")

    with pytest.raises(SpecError, match=rf"columns\.c: .*{message}"):
        load_contract(path)


def test_contract_can_be_built_in_code() -> None:
    contract = SchemaContract(columns={"a": ColumnRule(type="bool")})

    assert contract.allow_extra_columns is True
