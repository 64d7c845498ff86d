import numpy as np
import pytest
from sklearn import metrics as skm

from trainforge.evaluate import binary_metrics, multiclass_metrics, regression_metrics, roc_auc


@pytest.fixture
def binary_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    scores = np.clip(y * 0.3 + rng.random(500) * 0.7, 0, 1)
    scores[:50] = 0.5  # ties
    return y, scores


def test_roc_auc_matches_scikit_learn_with_ties(binary_data):
    y, scores = binary_data
    assert roc_auc(y, scores) == pytest.approx(skm.roc_auc_score(y, scores), abs=1e-12)


def test_roc_auc_undefined_with_one_class():
    assert np.isnan(roc_auc(np.ones(5), np.linspace(0, 1, 5)))


def test_binary_metrics_match_scikit_learn(binary_data):
    y, scores = binary_data
    got = binary_metrics(y, scores, threshold=0.6)
    predicted = scores >= 0.6
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, predicted))
    assert got["precision"] == pytest.approx(skm.precision_score(y, predicted))
    assert got["recall"] == pytest.approx(skm.recall_score(y, predicted))
    assert got["f1"] == pytest.approx(skm.f1_score(y, predicted))
    assert got["log_loss"] == pytest.approx(skm.log_loss(y, scores), rel=1e-6)


def test_binary_metrics_without_positive_predictions_are_zero_not_nan():
    got = binary_metrics(np.array([0, 1, 1]), np.array([0.1, 0.2, 0.3]))
    assert got["precision"] == 0.0 and got["recall"] == 0.0 and got["f1"] == 0.0


def test_multiclass_metrics_match_scikit_learn():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 300)
    probs = rng.dirichlet(np.ones(3), 300)
    got = multiclass_metrics(y, probs)
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, probs.argmax(1)))
    assert got["macro_f1"] == pytest.approx(skm.f1_score(y, probs.argmax(1), average="macro"))
    assert got["log_loss"] == pytest.approx(skm.log_loss(y, probs), rel=1e-6)


def test_regression_metrics_match_scikit_learn():
    rng = np.random.default_rng(2)
    y = rng.normal(size=200)
    pred = y + rng.normal(scale=0.3, size=200)
    got = regression_metrics(y, pred)
    assert got["mse"] == pytest.approx(skm.mean_squared_error(y, pred))
    assert got["mae"] == pytest.approx(skm.mean_absolute_error(y, pred))
    assert got["r2"] == pytest.approx(skm.r2_score(y, pred))
