"""The digits example end to end: a CNN in bf16-mixed with a cosine schedule and early stopping."""

import shutil
from pathlib import Path

import pytest
from example_scripts import EXAMPLES, load_example_script

from trainforge.entities import RunStatus
from trainforge.pipeline import run_pipeline
from trainforge.tracking import default_store

pytest.importorskip("sklearn", reason="the digits images ship with scikit-learn")
EXAMPLE = EXAMPLES / "digits"


def load_prepare():
    return load_example_script("digits", "prepare.py")


@pytest.fixture
def digits_project(tmp_path: Path) -> Path:
    for name in ("pipeline.yaml", "contract.yaml"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    load_prepare().prepare(tmp_path / "data")
    return tmp_path


@pytest.mark.slow
def test_digits_cnn_reaches_95_percent_test_accuracy(digits_project):
    result = run_pipeline(digits_project / "pipeline.yaml")
    assert result.evaluation.metrics["accuracy"] >= 0.95
    assert result.gate.passed and result.model_version.model_name == "digits_cnn"
    run = default_store().get_run(result.run.run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.tags["trainer"]["precision"] == "bf16-mixed"
    assert run.params["training"]["schedule"]["name"] == "cosine"
    assert run.params["training"]["early_stopping"]["metric"] == "val_accuracy"


def test_prepare_is_deterministic_and_leaves_an_existing_file_alone(tmp_path):
    prepare = load_prepare()
    first = prepare.prepare(tmp_path / "a")
    second = prepare.prepare(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    stamp = first.stat().st_mtime_ns
    assert prepare.prepare(tmp_path / "a") == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["digits.parquet"]
    frame = prepare.digits_frame()
    assert frame.shape == (1797, 66) and frame.columns[0] == "image_id"
    assert list(frame.columns[1:65]) == [f"px_{i}" for i in range(64)]
    assert frame["label"].between(0, 9).all() and frame["image_id"].is_unique
