import math

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve

from trainforge.evaluate import (
    METRICS_BY_TASK,
    binary_metrics,
    confusion_matrix,
    multiclass_metrics,
    regression_metrics,
    roc_auc,
)

CLOSE = {"rel": 1e-5, "abs": 1e-6}  # torchmetrics counts in float32


@pytest.fixture
def binary_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    scores = np.clip(y * 0.3 + rng.random(500) * 0.7, 0, 1)
    scores[:50] = 0.5  # ties
    return y, scores


@pytest.fixture
def multiclass_data():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 300)
    probs = rng.dirichlet(np.ones(3), 300)
    probs[np.arange(300), y] += 0.3 * rng.random(300)  # better than chance
    return y, probs / probs.sum(axis=1, keepdims=True)


def expected_calibration_error(hits, confidence, bins=15):
    """scikit-learn's reliability curve weighted by the rows in each bin."""
    observed, predicted = calibration_curve(hits, confidence, n_bins=bins)
    edges = np.linspace(0, 1, bins + 1)
    counts = np.bincount(np.searchsorted(edges[1:-1], confidence), minlength=bins)
    weights = counts[counts > 0] / len(confidence)
    return float(np.sum(weights * np.abs(observed - predicted)))


def test_roc_auc_matches_scikit_learn_with_ties(binary_data):
    y, scores = binary_data
    assert roc_auc(y, scores) == pytest.approx(skm.roc_auc_score(y, scores), **CLOSE)


def test_roc_auc_undefined_with_one_class():
    assert np.isnan(roc_auc(np.ones(5), np.linspace(0, 1, 5)))


def test_binary_metrics_match_scikit_learn(binary_data):
    y, scores = binary_data
    got = binary_metrics(y, scores, threshold=0.5)
    predicted = scores >= 0.5  # the tied scores at exactly 0.5 count as positive
    assert set(got) == set(METRICS_BY_TASK["binary"])
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, predicted), **CLOSE)
    assert got["precision"] == pytest.approx(skm.precision_score(y, predicted), **CLOSE)
    assert got["recall"] == pytest.approx(skm.recall_score(y, predicted), **CLOSE)
    assert got["f1"] == pytest.approx(skm.f1_score(y, predicted), **CLOSE)
    assert got["roc_auc"] == pytest.approx(skm.roc_auc_score(y, scores), **CLOSE)
    assert got["pr_auc"] == pytest.approx(skm.average_precision_score(y, scores), **CLOSE)
    assert got["log_loss"] == pytest.approx(skm.log_loss(y, scores), rel=1e-9)
    assert got["calibration_error"] == pytest.approx(
        expected_calibration_error(y, scores), **CLOSE)


def test_binary_metrics_without_positive_predictions_are_zero_not_nan():
    got = binary_metrics(np.array([0, 1, 1]), np.array([0.1, 0.2, 0.3]))
    assert got["precision"] == 0.0 and got["recall"] == 0.0 and got["f1"] == 0.0


def test_metrics_rows_without_positives_cannot_define_are_nan():
    got = binary_metrics(np.zeros(4), np.array([0.1, 0.2, 0.6, 0.7]))
    assert all(math.isnan(got[name]) for name in ("recall", "f1", "roc_auc", "pr_auc"))
    assert got["accuracy"] == 0.5 and got["precision"] == 0.0
    assert got["log_loss"] == pytest.approx(skm.log_loss([0, 0, 0, 0], [0.1, 0.2, 0.6, 0.7],
                                                         labels=[0, 1]))


def test_multiclass_metrics_match_scikit_learn(multiclass_data):
    y, probs = multiclass_data
    got = multiclass_metrics(y, probs)
    predicted = probs.argmax(1)
    assert set(got) == set(METRICS_BY_TASK["multiclass"])
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, predicted), **CLOSE)
    for name, reference in (("macro_precision", skm.precision_score),
                            ("macro_recall", skm.recall_score), ("macro_f1", skm.f1_score)):
        assert got[name] == pytest.approx(reference(y, predicted, average="macro"), **CLOSE)
    assert got["roc_auc"] == pytest.approx(
        skm.roc_auc_score(y, probs, multi_class="ovr", average="macro"), **CLOSE)
    assert got["pr_auc"] == pytest.approx(
        skm.average_precision_score(np.eye(3)[y], probs, average="macro"), **CLOSE)
    assert got["log_loss"] == pytest.approx(skm.log_loss(y, probs), rel=1e-9)
    assert got["calibration_error"] == pytest.approx(
        expected_calibration_error(predicted == y, probs.max(1)), **CLOSE)


def test_multiclass_ranking_metrics_need_every_class(multiclass_data):
    y, probs = multiclass_data
    present = y != 2
    got = multiclass_metrics(y[present], probs[present])
    assert math.isnan(got["roc_auc"]) and math.isnan(got["pr_auc"])
    assert got["accuracy"] == pytest.approx(
        skm.accuracy_score(y[present], probs[present].argmax(1)), **CLOSE)


def test_regression_metrics_match_scikit_learn():
    rng = np.random.default_rng(2)
    y = rng.normal(size=200)
    pred = y + rng.normal(scale=0.3, size=200)
    got = regression_metrics(y, pred)
    assert set(got) == set(METRICS_BY_TASK["regression"])
    assert got["mse"] == pytest.approx(skm.mean_squared_error(y, pred))
    assert got["rmse"] == pytest.approx(skm.root_mean_squared_error(y, pred))
    assert got["mae"] == pytest.approx(skm.mean_absolute_error(y, pred))
    assert got["r2"] == pytest.approx(skm.r2_score(y, pred))


def test_r2_of_one_row_or_constant_targets_is_nan():
    assert math.isnan(regression_metrics(np.ones(1), np.ones(1))["r2"])
    assert math.isnan(regression_metrics(np.ones(3), np.array([1.0, 2.0, 3.0]))["r2"])


def test_confusion_matrix_matches_scikit_learn(binary_data, multiclass_data):
    y, scores = binary_data
    assert confusion_matrix(y, scores, "binary", 0.6) == skm.confusion_matrix(
        y, scores >= 0.6).tolist()
    y, probs = multiclass_data
    assert confusion_matrix(y, probs, "multiclass") == skm.confusion_matrix(
        y, probs.argmax(1)).tolist()
