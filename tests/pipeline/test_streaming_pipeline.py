"""The pipeline with `data.streaming: true` on the fraud example: the contract checked over the
row groups (a broken one stops the run naming the file and row), the data profiled, the same
split as in memory; and the settings streaming refuses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from home import home_store

from trainforge.config import Settings, load_spec
from trainforge.errors import RunFailed, SpecError
from trainforge.pipeline import run_pipeline
from trainforge.versioning import open_repository

STREAMING = ["data.streaming=true", "data.shuffle_rows=4096", "training.epochs=1"]


def test_a_streamed_run_checks_the_contract_over_the_row_groups(fraud_project: Path) -> None:
    contract = yaml.safe_load((fraud_project / "contract.yaml").read_text())
    contract["columns"]["amount"]["max"] = 100
    (fraud_project / "contract.yaml").write_text(yaml.safe_dump(contract))
    with pytest.raises(RunFailed) as failed:
        run_pipeline(fraud_project / "pipeline.yaml", STREAMING)
    message = str(failed.value)
    assert "rows break the schema contract" in message
    assert "amount" in message and "transactions-2026-01-0" in message and " row " in message
    run = home_store().get_run(failed.value.run_id)
    assert run.tags["validation"]["passed"] is False
    assert run.tags["data"]["streaming"] is True


def test_a_streamed_run_profiles_its_data_and_records_its_version(fraud_project: Path) -> None:
    result = run_pipeline(fraud_project / "pipeline.yaml", STREAMING)
    run = home_store().get_run(result.run.run_id)
    in_memory = run_pipeline(fraud_project / "pipeline.yaml", ["training.epochs=1"])
    reference = home_store().get_run(in_memory.run.run_id)
    assert run.data_version_id == reference.data_version_id
    assert run.tags["profile"]["rows"] == reference.tags["profile"]["rows"]
    assert run.tags["features"]["count"] == reference.tags["features"]["count"]
    assert run.metrics["test_roc_auc"] > 0.8


def test_a_streamed_run_reads_a_pinned_version_whatever_the_source_holds(
        fraud_project: Path) -> None:
    repository = open_repository(Settings.from_env(), home_store())
    pinned = repository.snapshot(str(fraud_project / "data"), name="fraud").version
    extra = sorted((fraud_project / "data").glob("*.parquet"))[0]
    shutil.copy(extra, extra.with_name("transactions-2099-01-01.parquet"))
    result = run_pipeline(fraud_project / "pipeline.yaml", [*STREAMING, "data.version=fraud"])
    assert home_store().get_run(result.run.run_id).data_version_id == pinned.data_version_id
    moved_on = run_pipeline(fraud_project / "pipeline.yaml", STREAMING)
    assert home_store().get_run(moved_on.run.run_id).data_version_id != pinned.data_version_id


def test_streaming_refuses_what_needs_every_row_in_memory(fraud_project: Path) -> None:
    spec = fraud_project / "pipeline.yaml"
    with pytest.raises(SpecError, match="quarantine is not available with streaming"):
        load_spec(spec, ["data.streaming=true", "data.on_fail=quarantine"])
    with pytest.raises(SpecError, match="cross_validation .* not available with data.streaming"):
        load_spec(spec, ["data.streaming=true", "evaluation.cross_validation=3"])


def test_a_csv_source_cannot_stream(fraud_project: Path) -> None:
    data = fraud_project / "data"
    first = sorted(data.glob("*.parquet"))[0]
    pd.read_parquet(first).to_csv(data / "extra.csv", index=False)
    with pytest.raises(RunFailed, match=r"extra\.csv: data\.streaming reads Parquet row groups"):
        run_pipeline(fraud_project / "pipeline.yaml",
                     [*STREAMING, f"data.source={data}"])
