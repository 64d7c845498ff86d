import json

import numpy as np
import pytest
import torch
from sklearn import metrics as skm

from trainforge.config import EvaluationSpec
from trainforge.errors import DataError
from trainforge.evaluate import (
    EvalReport,
    choose_threshold,
    evaluate_model,
    pick_threshold,
    predict_scores,
    score_report,
)


@pytest.fixture
def validation():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400)
    return y, np.clip(y * 0.25 + rng.random(400) * 0.75, 0, 1)


def test_f1_picks_the_threshold_scikit_learn_scores_best():
    y = np.array([0, 0, 1, 0, 1, 1, 0, 1, 1, 0])
    scores = np.array([0.05, 0.2, 0.3, 0.35, 0.4, 0.55, 0.6, 0.7, 0.8, 0.9])
    # at 0.3 all five positives are flagged with three negatives: F1 10/13, the best
    f1 = {t: skm.f1_score(y, scores >= t) for t in scores}
    best = max(f1.values())
    choice = choose_threshold(y, scores, "f1")
    assert (choice.by, choice.target, choice.target_met) == ("f1", None, None)
    assert choice.value == 0.3 and f1[0.3] == best
    assert f1[0.3] > f1[0.05] and f1[0.3] > f1[0.4]


def test_f1_ties_go_to_the_higher_threshold():
    y = np.array([1, 0, 0, 1])
    scores = np.array([0.9, 0.8, 0.7, 0.1])
    f1 = {t: skm.f1_score(y, scores >= t) for t in scores}
    assert f1[0.9] == f1[0.1] == max(f1.values())  # 2/3 flagging one row or all four
    assert choose_threshold(y, scores, "f1").value == 0.9


def test_target_recall_gives_the_best_precision_that_reaches_it(validation):
    y, scores = validation
    choice = choose_threshold(y, scores, "recall", 0.9)
    assert (choice.by, choice.target, choice.target_met) == ("recall", 0.9, True)
    assert skm.recall_score(y, scores >= choice.value) >= 0.9
    reaching = [t for t in np.unique(scores) if skm.recall_score(y, scores >= t) >= 0.9]
    best = max(skm.precision_score(y, scores >= t) for t in reaching)
    assert skm.precision_score(y, scores >= choice.value) == pytest.approx(best)
    assert choice.value != 0.5


def test_target_precision_gives_the_best_recall_that_reaches_it(validation):
    y, scores = validation
    choice = choose_threshold(y, scores, "precision", 0.8)
    assert skm.precision_score(y, scores >= choice.value) >= 0.8
    reaching = [t for t in np.unique(scores) if skm.precision_score(y, scores >= t) >= 0.8]
    best = max(skm.recall_score(y, scores >= t) for t in reaching)
    assert skm.recall_score(y, scores >= choice.value) == pytest.approx(best)


def test_an_unreachable_precision_falls_back_to_f1_and_says_so():
    y = np.array([0, 1, 0, 1, 0])
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.1])  # the top score is a negative
    choice = choose_threshold(y, scores, "precision", 0.95)
    assert (choice.by, choice.target_met) == ("precision", False)
    assert choice.value == choose_threshold(y, scores, "f1").value


def test_validation_of_one_class_cannot_place_a_threshold():
    with pytest.raises(DataError, match="both classes in the validation split"):
        choose_threshold(np.zeros(5), np.linspace(0, 1, 5), "f1")


def test_test_metrics_use_the_chosen_threshold(validation):
    y, scores = validation
    spec = EvaluationSpec(threshold="auto", threshold_by="recall", threshold_target=0.95)
    choice = pick_threshold(spec, scores, y)
    report = score_report(scores, y, "binary", spec, "test", threshold=choice)
    assert report.threshold == choice
    assert report.metrics["recall"] == pytest.approx(
        skm.recall_score(y, scores >= choice.value), rel=1e-6)
    data = json.loads(json.dumps(report.to_dict()))
    assert (data["threshold"], data["threshold_by"], data["threshold_target"]) == (
        choice.value, "recall", 0.95)
    assert EvalReport.from_dict(data) == report


def test_a_fixed_threshold_is_recorded_as_fixed(validation):
    y, scores = validation
    spec = EvaluationSpec(threshold=0.3)
    report = score_report(scores, y, "binary", spec, "test")
    assert (report.threshold.value, report.threshold.by) == (0.3, "fixed")
    assert report.metrics["accuracy"] == pytest.approx(
        skm.accuracy_score(y, scores >= 0.3), rel=1e-6)
    with_auto = score_report(scores, y, "binary", EvaluationSpec(threshold="auto"), "val")
    assert with_auto.threshold.value == 0.5  # what the trainer's epochs use with auto


def test_evaluate_model_chooses_on_the_validation_rows_it_is_given():
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    rng = np.random.default_rng(6)
    x_val, x_test = (rng.normal(size=(200, 2)).astype(np.float32) for _ in range(2))
    y_val, y_test = ((x[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(np.float32)
                     for x in (x_val, x_test))
    spec = EvaluationSpec(threshold="auto")
    report = evaluate_model(model, x_test, y_test, "binary", spec, validation=(x_val, y_val))
    expected = choose_threshold(y_val, predict_scores(model, x_val, "binary"), "f1")
    assert report.threshold == expected
    with pytest.raises(DataError, match="evaluation.threshold: auto chooses on validation rows"):
        evaluate_model(model, x_test, y_test, "binary", spec)
