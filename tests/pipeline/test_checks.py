"""check_spec on the columns a spec names: checked against the data's header or footer when the
data is there, else against the contract, each problem naming the spec file, field path, column,
closest known column and where the known columns came from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from fraud_fixtures import EXAMPLE

from trainforge.config import load_spec
from trainforge.errors import SpecError
from trainforge.pipeline import check_spec, load_checked_spec

SPEC = """
name: demo
data:
  source: DATA
  target: is_fraud
  split: {method: time, time_column: ts}
features:
  transforms:
    - {type: impute, columns: [amount]}
    - {type: standardize, columns: [amount, hour]}
    - {type: one_hot, columns: [city]}
  passthrough: [card_present]
  exclude: [id]
model: {task: binary}
"""

COLUMNS = ["id", "ts", "amount", "hour", "city", "card_present", "is_fraud"]


def _project(tmp_path: Path, data: str = "rows.csv", contract: str | None = None) -> Path:
    text = SPEC.replace("DATA", data)
    if contract is not None:
        (tmp_path / "contract.yaml").write_text(contract)
        text = text.replace("  target: is_fraud", "  target: is_fraud\n  contract: contract.yaml")
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return path


def _problems(path: Path, overrides: list[str] | None = None) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_checked_spec(path, overrides)
    return caught.value.problems


def _write_csv(tmp_path: Path) -> Path:
    path = tmp_path / "rows.csv"
    path.write_text(",".join(COLUMNS) + "\ntx-1,2024-01-01,1.5,3,rome,1,0\n")
    return path


def test_names_that_match_the_csv_header_pass(tmp_path: Path) -> None:
    _write_csv(tmp_path)

    assert load_checked_spec(_project(tmp_path)).data.target == "is_fraud"


def test_a_wrong_target_names_the_field_column_suggestion_and_data_file(tmp_path: Path) -> None:
    data = _write_csv(tmp_path)
    path = _project(tmp_path)

    assert _problems(path, ["data.target=is_frad"]) == [
        f"{path}: data.target: 'is_frad' is not a column of data file {data}; did you mean "
        "'is_fraud'?; its columns are: id, ts, amount, hour, city, card_present, is_fraud"
    ]


def test_every_wrong_column_is_reported_at_once_with_its_field_path(tmp_path: Path) -> None:
    _write_csv(tmp_path)
    path = _project(tmp_path)

    problems = _problems(path, ["features.transforms.1.columns=[amount, Hour]",
                                "features.passthrough=[card_presnt]",
                                "features.exclude=[ids]", "data.split.time_column=time"])

    assert [p.split(": ")[1] for p in problems] == [
        "data.split.time_column", "features.transforms.1.columns", "features.passthrough",
        "features.exclude",
    ]
    assert "'Hour' is not a column of data file" in problems[1]
    assert "did you mean 'hour'?" in problems[1]
    assert "did you mean 'card_present'?" in problems[2]
    assert "did you mean 'id'?" in problems[3]


def test_outputs_of_an_earlier_one_hot_count_as_columns(tmp_path: Path) -> None:
    _write_csv(tmp_path)
    path = _project(tmp_path)

    assert load_checked_spec(path, ["features.passthrough=[card_present, city=rome]"])
    assert _problems(path, ["features.transforms.0.columns=[city=rome]"])[0].startswith(
        f"{path}: features.transforms.0.columns: 'city=rome' is not a column")


def test_a_parquet_source_is_checked_by_its_footer_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data").mkdir()
    frame = pd.DataFrame({c: [1] for c in COLUMNS})
    for day in ("02", "01"):
        frame.to_parquet(tmp_path / "data" / f"part-{day}.parquet")
    path = _project(tmp_path, "data/part-*.parquet")

    def no_rows(*args: object, **kwargs: object) -> None:
        raise AssertionError("check_spec read rows")

    monkeypatch.setattr(pd, "read_parquet", no_rows)
    monkeypatch.setattr(pq, "read_table", no_rows)

    [problem] = _problems(path, ["data.target=fraud"])
    assert problem.startswith(
        f"{path}: data.target: 'fraud' is not a column of data file "
        f"{tmp_path / 'data' / 'part-01.parquet'}; did you mean 'is_fraud'?")


def test_without_data_the_contract_names_the_columns(tmp_path: Path) -> None:
    contract = "columns:\n" + "".join(f"  {c}: {{type: string}}\n" for c in COLUMNS)
    path = _project(tmp_path, "missing/*.csv", contract)

    [problem] = _problems(path, ["features.transforms.2.columns=[cty]"])

    assert problem == (
        f"{path}: features.transforms.2.columns: 'cty' is not a column of contract "
        f"{tmp_path / 'contract.yaml'}; did you mean 'city'?; its columns are: "
        + ", ".join(COLUMNS)
    )


def test_the_data_wins_over_the_contract_when_both_are_there(tmp_path: Path) -> None:
    data = _write_csv(tmp_path)
    path = _project(tmp_path, contract="columns:\n  is_fraud: {type: int}\n")

    [problem] = _problems(path, ["features.passthrough=[card_present, extra]"])

    assert f"'extra' is not a column of data file {data}" in problem


def test_without_data_or_contract_columns_are_not_checked(tmp_path: Path) -> None:
    path = _project(tmp_path, "generated-later/*.parquet")

    assert load_checked_spec(path, ["data.target=anything"]).data.target == "anything"


def test_an_unreadable_data_file_is_a_problem_of_data_source(tmp_path: Path) -> None:
    (tmp_path / "rows.parquet").write_bytes(b"not parquet")
    path = _project(tmp_path, "rows.parquet")

    [problem] = _problems(path)

    assert problem.startswith(
        f"{path}: data.source: {tmp_path / 'rows.parquet'}: cannot read as parquet")


def test_a_broken_contract_and_spec_problems_are_reported_together(tmp_path: Path) -> None:
    _write_csv(tmp_path)
    path = _project(tmp_path, contract="columns: {}\n")

    problems = _problems(path, ["data.target=label"])

    assert problems[0].startswith(f"{path}: data.target: 'label' is not a column of data file")
    assert problems[1] == f"{tmp_path / 'contract.yaml'}: columns: expected at least one column"


def test_positive_label_applies_to_binary_tasks_only(tmp_path: Path) -> None:
    _write_csv(tmp_path)
    path = _project(tmp_path)

    assert _problems(path, ["data.positive_label=1", "model.task=multiclass"]) == [
        f"{path}: data.positive_label: applies to a binary task only; model.task is "
        "'multiclass'"
    ]


def test_the_fraud_example_is_checked_against_its_data(fraud_project: Path) -> None:
    path = fraud_project / "pipeline.yaml"
    first = sorted((fraud_project / "data").glob("*.parquet"))[0]

    [problem] = _problems(path, ["features.transforms.1.columns=[amount, customer_avg_amt]"])

    assert problem.startswith(
        f"{path}: features.transforms.1.columns: 'customer_avg_amt' is not a column of data "
        f"file {first}; did you mean 'customer_avg_amount'?; its columns are: ")


def test_the_fraud_example_without_data_is_checked_against_its_contract(tmp_path: Path) -> None:
    for name in ("pipeline.yaml", "contract.yaml"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    spec = load_spec(tmp_path / "pipeline.yaml", ["data.target=is_frad"])

    with pytest.raises(SpecError) as caught:
        check_spec(spec, "pipeline.yaml")

    assert caught.value.problems == [
        f"pipeline.yaml: data.target: 'is_frad' is not a column of contract "
        f"{tmp_path / 'contract.yaml'}; did you mean 'is_fraud'?; its columns are: "
        "transaction_id, ts, amount, merchant_category, country, hour, device_type, "
        "card_present, account_age_days, prior_txn_24h, prior_txn_7d, distance_from_home_km, "
        "customer_avg_amount, is_fraud"
    ]


def test_positive_label_must_be_an_allowed_target_value_of_the_contract(tmp_path: Path) -> None:
    contract = "columns:\n" + "".join(f"  {c}: {{type: string}}\n" for c in COLUMNS[:-1])
    contract += "  is_fraud: {type: string, allowed: [fraud, legit]}\n"
    path = _project(tmp_path, "missing/*.csv", contract)

    assert load_checked_spec(path, ["data.positive_label=fraud"])
    assert _problems(path, ["data.positive_label=Fraud"])[0] == (
        f"{path}: data.positive_label: 'Fraud' is none of the values contract "
        f"{tmp_path / 'contract.yaml'} allows for the target 'is_fraud': 'fraud', 'legit'"
    )
