import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from trainforge.config import EvaluationSpec
from trainforge.errors import DataError
from trainforge.evaluate import EvalReport, binary_metrics, score_report
from trainforge.evaluate._slices import slice_labels


@pytest.fixture
def regions():
    """North is scored well, south badly, east holds negatives only."""
    rng = np.random.default_rng(5)
    region = np.repeat(["north", "south", "east"], [200, 200, 60])
    y = np.concatenate([rng.integers(0, 2, 400), np.zeros(60, dtype=np.int64)])
    noise = rng.random(460)
    scores = np.where(region == "north", 0.6 * y + 0.4 * noise, noise)
    frame = pd.DataFrame({"region": region, "amount": rng.exponential(50, 460)})
    return frame, y, scores


def test_each_slice_gets_the_task_metrics_and_the_largest_gap(regions):
    frame, y, scores = regions
    spec = EvaluationSpec(slices=["region"])
    report = score_report(scores, y, "binary", spec, "test", frame=frame)
    north, south = (frame.region == "north").to_numpy(), (frame.region == "south").to_numpy()
    slices = report.slices["region"]
    assert list(slices) == ["east", "north", "south"]
    assert slices["north"]["rows"] == 200 and slices["east"]["rows"] == 60
    auc_north = skm.roc_auc_score(y[north], scores[north])
    auc_south = skm.roc_auc_score(y[south], scores[south])
    assert slices["north"]["roc_auc"] == pytest.approx(auc_north, rel=1e-5)
    assert slices["south"]["roc_auc"] == pytest.approx(auc_south, rel=1e-5)
    assert report.metrics["slice_gap_roc_auc"] == pytest.approx(auc_north - auc_south, rel=1e-5)
    accuracy = [skm.accuracy_score(y[m], scores[m] >= 0.5)
                for m in (frame.region == r for r in ("east", "north", "south"))]
    assert report.metrics["slice_gap_accuracy"] == pytest.approx(
        max(accuracy) - min(accuracy), rel=1e-5)
    assert report.prefixed()["test_slice_gap_roc_auc"] == report.metrics["slice_gap_roc_auc"]


def test_a_slice_of_one_class_reports_ranking_metrics_as_missing(regions):
    frame, y, scores = regions
    report = score_report(scores, y, "binary", EvaluationSpec(slices=["region"]), "test",
                          frame=frame)
    east = report.slices["region"]["east"]
    assert east["roc_auc"] is None and east["pr_auc"] is None and east["recall"] is None
    assert east["accuracy"] == pytest.approx(
        binary_metrics(y[400:], scores[400:])["accuracy"])
    data = json.loads(json.dumps(report.to_dict()))
    assert data["slices"]["region"]["east"]["roc_auc"] is None
    assert EvalReport.from_dict(data).slices == report.slices


def test_slices_under_min_rows_are_reported_but_left_out_of_the_gap(regions):
    frame, y, scores = regions
    spec = EvaluationSpec(slices=["region"], slice_min_rows=100)
    report = score_report(scores, y, "binary", spec, "test", frame=frame)
    assert report.slices["region"]["east"]["rows"] == 60
    accuracy = [report.slices["region"][r]["accuracy"] for r in ("north", "south")]
    assert report.metrics["slice_gap_accuracy"] == pytest.approx(abs(accuracy[0] - accuracy[1]))


def test_the_gap_is_the_largest_over_the_columns(regions):
    frame, y, scores = regions
    spec = EvaluationSpec(slices=["region", "amount"])
    report = score_report(scores, y, "binary", spec, "test", frame=frame)
    gaps = report.slice_gaps
    assert set(gaps) == {"region", "amount"}
    assert report.metrics["slice_gap_f1"] == max(gaps["region"]["f1"], gaps["amount"]["f1"])


def test_numeric_columns_with_many_values_are_cut_into_quantile_buckets():
    values = pd.Series([float(v) for v in range(1, 101)] + [None])
    labels = slice_labels(values, 4)
    assert list(labels.cat.categories) == [
        "(0.999, 25.75]", "(25.75, 50.5]", "(50.5, 75.25]", "(75.25, 100]", "missing"]
    assert labels.value_counts().tolist() == [25, 25, 25, 25, 1]
    few = slice_labels(pd.Series([3, 1, 2, 1]), 4)
    assert list(few.cat.categories) == ["1", "2", "3"]
    flags = slice_labels(pd.Series([True, False, True, False, True, False]), 2)
    assert list(flags.cat.categories) == ["False", "True"]


def test_regression_slices_and_nan_metrics_stay_missing():
    frame = pd.DataFrame({"site": ["a", "a", "a", "b"]})
    y = np.array([1.0, 2.0, 3.0, 5.0])
    pred = np.array([1.5, 2.0, 2.0, 4.0])
    report = score_report(pred, y, "regression", EvaluationSpec(slices=["site"],
                                                                slice_min_rows=1),
                          "test", frame=frame)
    assert report.slices["site"]["b"]["r2"] is None  # one row
    assert report.slices["site"]["b"]["mae"] == pytest.approx(1.0)
    assert report.metrics["slice_gap_mae"] == pytest.approx(1.0 - 0.5)
    assert "slice_gap_r2" not in report.metrics
    assert not any(isinstance(v, float) and math.isnan(v) for v in
                   report.slices["site"]["a"].values())


def test_a_column_the_rows_lack_is_named_with_the_field(regions):
    frame, y, scores = regions
    with pytest.raises(DataError, match="evaluation.slices: 'regoin' is not a column of the "
                                        "data; its columns are: region, amount"):
        score_report(scores, y, "binary", EvaluationSpec(slices=["regoin"]), "test",
                     frame=frame)
