"""The steps of the training pipeline called one by one, writing to an in-memory recorder: a
step records through `RunRecorder` only and never reaches the tracking store."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from trainforge.config import load_spec
from trainforge.entities import DataVersion, ModelStage, Run, RunStatus
from trainforge.errors import DataError, DataValidationError
from trainforge.pipeline import _steps
from trainforge.storage import SqlStore
from trainforge.tracking import RunRecorder


class MemoryRecorder:
    """A `RunRecorder` keeping everything in dicts, artifacts under a folder."""

    def __init__(self, run: Run, folder: Path) -> None:
        self._run = run
        self.folder = folder
        self.metrics: list[tuple[dict[str, float], int]] = []
        self.tags: dict[str, Any] = {}
        self.summary: dict[str, float] = {}
        self.artifacts: dict[str, bytes] = {}
        self.data_version: DataVersion | None = None

    @property
    def run_id(self) -> str:
        return self._run.run_id

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.metrics.append((dict(metrics), step))

    def set_tags(self, tags: dict[str, Any]) -> None:
        self.tags.update(tags)

    def set_summary(self, metrics: dict[str, float]) -> None:
        self.summary.update(metrics)

    def set_data_version(self, version: DataVersion) -> None:
        self.data_version = version

    def put_artifact(self, name: str, data: bytes) -> str:
        self.artifacts[name] = data
        return self.artifact_uri(name)

    def log_artifact(self, path: str | Path, name: str | None = None) -> str:
        return self.put_artifact(name or Path(path).name, Path(path).read_bytes())

    def artifact_uri(self, name: str = "") -> str:
        return str(self.folder / name) if name else str(self.folder)

    def info(self) -> Run:
        version = self.data_version.data_version_id if self.data_version else None
        return replace(self._run, data_version_id=version, metrics=dict(self.summary))


@pytest.fixture
def registry(sqlite_url: str):
    store = SqlStore(sqlite_url)
    yield store
    store.close()


def test_each_step_records_through_the_recorder_only(fraud_project, registry, tmp_path):
    spec = load_spec(fraud_project / "pipeline.yaml", ["training.epochs=1"])
    experiment = registry.get_or_create_experiment("steps")
    stored = registry.create_run(experiment.experiment_id, {}, {}, "unused")
    recorder = MemoryRecorder(stored, tmp_path / "artifacts")
    run: RunRecorder = recorder
    task = spec.model.task

    values: dict[str, Any] = {"run": run}
    values |= _steps.ingest(spec.data, None, "fraud", run)
    values |= _steps.validate(spec.data, task, None, values["read"], run)
    values |= _steps.split(spec.data, values["raw"], values["validation"])
    values |= _steps.features(spec.features, spec.data, task, values["raw"], values["splits"],
                              run)
    values |= _steps.train(spec, (), None, spec.credentials(), values["dataset"], run)
    values |= _steps.evaluate(spec.evaluation, task, values["trained"], values["dataset"],
                              values["splits"], run)
    values |= _steps.gate(spec.evaluation, values["trained"], values["evaluation"], run)
    values |= _steps.register(spec.registry, registry, values["trained"], values["evaluation"],
                              values["gate"], values["splits"], values["feature_pipeline"], run)

    assert recorder.data_version is not None and recorder.data_version.num_rows == 24_000
    plots = {f"evaluation/plots/{name}.png" for name in (
        "roc", "pr", "confusion_matrix", "calibration", "slice_country", "slice_device_type")}
    assert set(recorder.artifacts) == {"validation/report.json", "features/pipeline.json",
                                       "model/weights.safetensors", "model/model.json",
                                       "evaluation/test.parquet", "evaluation/report.json",
                                       *plots}
    report = json.loads(recorder.artifacts["evaluation/report.json"])
    assert (report["split"], report["threshold"], report["threshold_by"]) == ("test", 0.5, "fixed")
    assert report["metrics"]["roc_auc"] == recorder.summary["test_roc_auc"]
    assert set(report["slices"]) == {"country", "device_type"}
    assert recorder.summary["threshold"] == 0.5
    assert "test_slice_gap_roc_auc" in recorder.summary
    assert json.loads(recorder.artifacts["validation/report.json"])["passed"] is True
    assert {"data", "validation", "features", "gates", "model_version"} <= set(recorder.tags)
    assert recorder.summary["test_roc_auc"] > 0.5 and recorder.summary["train_steps"] > 0
    assert {"train_loss", "val_loss"} <= {key for logged, _ in recorder.metrics for key in logged}
    assert any(Path(tmp_path / "artifacts" / "checkpoints").iterdir())
    golden = pd.read_parquet(io.BytesIO(recorder.artifacts["evaluation/test.parquet"]))
    test = values["splits"].test.reset_index(drop=True)
    pd.testing.assert_frame_equal(golden, test)

    version = values["model_version"]
    assert (version.model_name, version.version, version.stage) == (
        "fraud_detector", "1", ModelStage.STAGING)
    assert version.data_version_id == recorder.data_version.data_version_id
    assert version.artifact_uri == str(tmp_path / "artifacts" / "model")
    untouched = registry.get_run(stored.run_id)
    assert (untouched.params, untouched.tags, untouched.metrics) == ({}, {}, {})
    assert untouched.status is RunStatus.RUNNING and untouched.data_version_id is None


def test_the_gate_decides_on_training_and_test_metrics_without_reading_the_run(tmp_path):
    spec = load_spec(Path(__file__).parents[2] / "examples" / "fraud" / "pipeline.yaml",
                     ["evaluation.gates.0.metric=val_loss", "evaluation.gates.0.min=null",
                      "evaluation.gates.0.max=0.1"])
    now = datetime.now(timezone.utc)
    run = Run("r1", "e1", RunStatus.RUNNING, {}, {}, {}, {}, "unused", now, None, None, None,
              None, None)
    recorder = MemoryRecorder(run, tmp_path)

    class Trained:
        summary = {"val_loss": 0.3}

    class Evaluation:
        @staticmethod
        def prefixed() -> dict[str, float]:
            return {"test_roc_auc": 0.9}

    decided = _steps.gate(spec.evaluation, Trained(), Evaluation(), recorder)["gate"]
    assert not decided.passed and "val_loss" in decided.failures[0]
    assert recorder.tags["gates"]["passed"] is False


def _until_features(spec, recorder) -> dict[str, Any]:
    task = spec.model.task
    values: dict[str, Any] = _steps.ingest(spec.data, None, "fraud", recorder)
    values |= _steps.validate(spec.data, task, None, values["read"], recorder)
    values |= _steps.split(spec.data, values["raw"], values["validation"])
    return values | _steps.features(spec.features, spec.data, task, values["raw"],
                                    values["splits"], recorder)


def test_columns_left_unused_are_warned_about_once_and_recorded(fraud_project, tmp_path, caplog):
    spec = load_spec(fraud_project / "pipeline.yaml", ["features.exclude=[]"])
    recorder = MemoryRecorder(_fake_run(), tmp_path)

    with caplog.at_level("WARNING", logger="trainforge"):
        _until_features(spec, recorder)

    [warning] = [r for r in caplog.records if r.name == "trainforge"]
    assert warning.getMessage().startswith(
        "features: 1 data column(s) are not used: transaction_id (name them in")
    assert "features.include: remaining" in warning.getMessage()
    assert recorder.tags["features"]["unused"] == ["transaction_id"]


def test_include_remaining_adds_every_column_not_named(fraud_project, tmp_path, caplog):
    spec = load_spec(fraud_project / "pipeline.yaml", [
        "features.include=remaining", "features.passthrough=[]",
        "features.transforms=[{type: impute, columns: [distance_from_home_km]}]"])
    recorder = MemoryRecorder(_fake_run(), tmp_path)

    with caplog.at_level("WARNING", logger="trainforge"):
        dataset = _until_features(spec, recorder)["dataset"]

    assert not [r for r in caplog.records if r.name == "trainforge"]
    assert recorder.tags["features"]["unused"] == []
    names = dataset.feature_names
    assert {"amount", "hour", "card_present", "distance_from_home_km"} <= set(names)
    assert any(n.startswith("merchant_category=") for n in names)
    assert not any(n.startswith(("transaction_id", "ts", "is_fraud")) for n in names)


def test_a_target_missing_from_the_data_is_reported_against_the_data_file(fraud_project,
                                                                          tmp_path):
    for path in (fraud_project / "data").glob("*.parquet"):
        pd.read_parquet(path).drop(columns=["is_fraud"]).to_parquet(path)
    spec = load_spec(fraud_project / "pipeline.yaml")
    recorder = MemoryRecorder(_fake_run(), tmp_path)
    raw = _steps.ingest(spec.data, None, "fraud", recorder)["read"]

    with pytest.raises(DataValidationError) as caught:
        _steps.validate(spec.data, "binary", None, raw, recorder)
    head = str(caught.value).splitlines()[0]
    assert head == (f"{spec.data.source}: rows break the schema contract in "
                    f"{spec.data.contract}")
    assert "is_fraud: present" in str(caught.value)

    without_contract = spec.data.model_copy(update={"contract": None})
    with pytest.raises(DataError, match=rf"^{re.escape(spec.data.source)}: data.target "
                                        r"'is_fraud': no such column"):
        _steps.validate(without_contract, "binary", None, raw, recorder)


def _fake_run() -> Run:
    now = datetime.now(timezone.utc)
    return Run("r1", "e1", RunStatus.RUNNING, {}, {}, {}, {}, "unused", now, None, None, None,
               None, None)


def test_rows_a_feature_cannot_encode_are_named_by_file_and_row(fraud_project, tmp_path):
    spec = load_spec(fraud_project / "pipeline.yaml", ["features.transforms.0.columns=[amount]"])
    recorder = MemoryRecorder(_fake_run(), tmp_path)
    days = sorted((fraud_project / "data").glob("*.parquet"))

    with pytest.raises(DataError) as caught:
        _until_features(spec, recorder)

    message = str(caught.value)
    assert "'distance_from_home_km' (" in message and "add an impute transform" in message
    first = re.search(r"\(first: ([^,]+),", message).group(1)
    name, row = re.fullmatch(r"(\S+) row (\d+)", first).groups()
    frame = pd.read_parquet(fraud_project / "data" / name)
    assert name in {d.name for d in days}
    assert pd.isna(frame["distance_from_home_km"].iloc[int(row) - 1])
