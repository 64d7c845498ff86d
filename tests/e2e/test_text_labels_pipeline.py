"""A CSV with a text label (scikit-learn's breast cancer data: 'malignant' / 'benign'), every
feature column taken by `features.include: remaining`, trained end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from home import home_artifacts, home_store

from trainforge.entities import RunStatus
from trainforge.errors import RunFailed
from trainforge.features import FeaturePipeline
from trainforge.pipeline import run_pipeline

SPEC = """
name: cancer
data:
  source: cancer.csv
  target: diagnosis
  positive_label: malignant
features:
  include: remaining
  exclude: [patient]
model: {task: binary, hidden: [16]}
training: {epochs: 3, batch_size: 64, optimizer: {lr: 0.01}, progress: off}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.drop(columns=["target"])
    frame = (frame - frame.mean()) / frame.std()  # the rows arrive scaled; no transform listed
    frame.insert(0, "patient", [f"p{i:03d}" for i in range(len(frame))])
    frame["diagnosis"] = data.target.map(dict(enumerate(data.target_names)))
    frame.to_csv(tmp_path / "cancer.csv", index=False)
    (tmp_path / "pipeline.yaml").write_text(SPEC)
    return tmp_path


def test_text_labels_train_with_every_remaining_column(project: Path) -> None:
    result = run_pipeline(project / "pipeline.yaml")

    run = home_store().get_run(result.run.run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.metrics["test_roc_auc"] > 0.9
    assert run.tags["features"]["unused"] == []
    artifacts = home_artifacts()
    description = json.loads(artifacts.get_bytes(run.run_id, "model/model.json"))
    assert description["classes"] == ["benign", "malignant"]
    assert len(description["feature_names"]) == 30
    features = FeaturePipeline.from_json(
        artifacts.get_bytes(run.run_id, "features/pipeline.json").decode())
    rows = pd.read_csv(project / "cancer.csv").head(3)
    assert features.transform(rows).shape == (3, 30)


def test_text_labels_without_positive_label_fail_naming_both_values(project: Path) -> None:
    spec = project / "pipeline.yaml"
    spec.write_text(SPEC.replace("  positive_label: malignant\n", ""))

    with pytest.raises(RunFailed) as caught:
        run_pipeline(spec)

    run = home_store().get_run(caught.value.run_id)
    assert run.status is RunStatus.FAILED
    assert (f"{project / 'cancer.csv'}: data.target 'diagnosis': holds 'malignant' and "
            "'benign', not 0/1; set data.positive_label") in run.error
