"""The data steps (ingest, validate, profile, split, features) are shared across runs: a run
whose spec's data section, source content and code are those of an earlier run takes them from
its cache, reads no data, and still holds everything they recorded (the data version, the
validation report, the profile, the feature pipeline); training and what follows run again.
A change of the data runs them again; a source gone is reported by ingest, as without a
cache."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from home import home_artifacts, home_store

from trainforge.entities import StepState
from trainforge.errors import RunFailed
from trainforge.ingest import _hashing
from trainforge.pipeline import _steps, run_pipeline

FAST = ["training.epochs=1"]
DATA_STEPS = ["ingest", "validate", "profile", "split", "features"]
RECORDED = ["validation/report.json", "data/profile.json", "features/pipeline.json"]


class Reads:
    """Counts what reads the data: the table reader, and the hashing of a file's bytes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tables = self.hashed = 0
        read_table, digest = _steps.read_table, _hashing._digest

        def counted_read(*args, **kwargs):
            self.tables += 1
            return read_table(*args, **kwargs)

        def counted_digest(*args, **kwargs):
            self.hashed += 1
            return digest(*args, **kwargs)

        monkeypatch.setattr(_steps, "read_table", counted_read)
        monkeypatch.setattr(_hashing, "_digest", counted_digest)

    def reset(self) -> None:
        self.tables = self.hashed = 0


def attempts(run_id: str) -> dict:
    store = home_store()
    return {a.step: a for a in store.list_step_runs(store.get_run(run_id).system["pipeline_run"])}


def test_a_run_with_another_learning_rate_reads_no_data(fraud_project: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    first = run_pipeline(fraud_project / "pipeline.yaml", FAST)
    assert reads.tables == 1 and reads.hashed == 6  # six files, hashed once
    reads.reset()
    second = run_pipeline(fraud_project / "pipeline.yaml", [*FAST, "training.optimizer.lr=0.01"])
    assert (reads.tables, reads.hashed) == (0, 0)

    before, after = attempts(first.run.run_id), attempts(second.run.run_id)
    for step in DATA_STEPS:
        assert after[step].state is StepState.CACHED, step
        assert after[step].cached_from == before[step].step_run_id
        assert after[step].outputs == before[step].outputs
    for step in ["train", "evaluate", "gate", "register"]:
        assert after[step].state is StepState.SUCCEEDED, step
    assert after["train"].outputs != before["train"].outputs

    store, artifacts = home_store(), home_artifacts()
    old, new = store.get_run(first.run.run_id), store.get_run(second.run.run_id)
    assert new.data_version_id == old.data_version_id is not None
    for tag in ["data", "validation", "profile", "features"]:
        assert new.tags[tag] == old.tags[tag], tag
    for name in RECORDED:
        assert artifacts.get_bytes(new.run_id, name) == artifacts.get_bytes(old.run_id, name)
    assert new.params["training"]["optimizer"]["lr"] == 0.01 != old.params["training"][
        "optimizer"]["lr"]
    assert second.model_version is not None and second.model_version.run_id == new.run_id
    assert second.model_version.data_version_id == old.data_version_id


def test_new_data_runs_the_data_steps_again(fraud_project: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    first = run_pipeline(fraud_project / "pipeline.yaml", FAST)
    day = sorted((fraud_project / "data").glob("*.parquet"))[-1]
    pd.read_parquet(day).head(50).to_parquet(fraud_project / "data" /
                                             "transactions-2026-02-01.parquet")
    reads = Reads(monkeypatch)
    grown = run_pipeline(fraud_project / "pipeline.yaml", FAST)
    assert reads.tables == 1 and reads.hashed == 1  # the new file; the others by their stat

    after = attempts(grown.run.run_id)
    assert {step: after[step].state for step in DATA_STEPS} == dict.fromkeys(
        DATA_STEPS, StepState.SUCCEEDED)
    assert after["ingest"].cache_parts["decision"] == "new"
    assert home_store().get_run(grown.run.run_id).data_version_id != first.run.data_version_id


def test_a_source_gone_is_reported_by_ingest(fraud_project: Path) -> None:
    run_pipeline(fraud_project / "pipeline.yaml", FAST)
    data = fraud_project / "data"
    data.rename(fraud_project / "elsewhere")
    with pytest.raises(RunFailed) as failed:
        run_pipeline(fraud_project / "pipeline.yaml", FAST)
    assert str(data) in str(failed.value)
    ingest = attempts(failed.value.run_id)["ingest"]
    assert ingest.state is StepState.FAILED
    assert ingest.cache_parts["decision"] == "uncached"
    assert str(data) in ingest.cache_parts["reason"]
