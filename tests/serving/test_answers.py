"""Scores as answers, per task: binary label by the threshold the evaluation recorded (0.5
without one), multiclass class and probabilities, regression value."""

from __future__ import annotations

import json

import numpy as np
import pytest
from live_server import records_of

from trainforge.serving import ServedVersion, load_served_version


def served(task: str, classes: tuple[object, ...] = (), threshold: float = 0.5) -> ServedVersion:
    return ServedVersion(version=None, runtime="torch", task=task,  # type: ignore[arg-type]
                         classes=classes, threshold=threshold, checker=None,  # type: ignore[arg-type]
                         encoder=None, scorer=None)  # type: ignore[arg-type]


def test_binary_labels_use_the_threshold_and_the_class_names():
    scores = np.array([0.2, 0.7, 0.9], dtype=np.float32)
    answers = served("binary", ("legit", "fraud"), threshold=0.8).answers(scores)
    assert [a["prediction"] for a in answers] == ["legit", "legit", "fraud"]
    assert [a["probability"] for a in answers] == scores.tolist()
    assert [a["prediction"] for a in served("binary").answers(scores)] == [0, 1, 1]


def test_multiclass_answers_the_likeliest_class_and_each_probability():
    scores = np.array([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3]], dtype=np.float32)
    answers = served("multiclass", (3, 5, 8)).answers(scores)
    assert [a["prediction"] for a in answers] == [5, 3]
    assert answers[0]["probabilities"] == dict(zip(["3", "5", "8"], scores[0].tolist()))


def test_regression_answers_the_value():
    assert served("regression").answers(np.array([1.5, -2.0])) == [
        {"prediction": 1.5}, {"prediction": -2.0}]


@pytest.mark.slow
def test_a_served_version_labels_by_the_threshold_its_evaluation_recorded(trained):
    run_id = trained.run_id
    report = {"split": "test", "threshold": 0.03, "threshold_by": "f1", "metrics": {}}
    trained.artifacts.put_bytes(run_id, "evaluation/report.json", json.dumps(report).encode())
    try:
        version = load_served_version(trained.artifacts, trained.version,
                                      trained.store.get_run(run_id), runtime="torch")
    finally:
        trained.artifacts.objects.delete(f"{run_id}/evaluation/report.json")
    assert version.threshold == 0.03 and version.metadata["threshold"] == 0.03
    answers = version.predict(records_of(trained.golden().head(200)))
    assert [a["prediction"] for a in answers] == [int(a["probability"] >= 0.03) for a in answers]
    assert {a["prediction"] for a in answers} == {0, 1}
