"""Evaluation metrics of (true labels, model scores), computed by torchmetrics.

Binary: `scores` are probabilities of the positive class, and a score >= `threshold` predicts
the positive class. Multiclass: `scores` are class probabilities of shape (n, classes) and the
prediction is the most probable class. Regression: `scores` are predictions.

A metric a set of rows cannot define is NaN, never an error, so a small slice reports it as
missing: ROC-AUC and PR-AUC need both classes (multiclass: every class); recall and F1 need a
positive row; R² needs two rows with different targets. Precision without a positive
prediction is 0 (scikit-learn's `zero_division=0`). Log loss clips probabilities to
[1e-15, 1 - 1e-15]; calibration error is the expected calibration error over 15 equal-width
bins (multiclass: of the top class).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torchmetrics.functional.classification as tmc
import torchmetrics.functional.regression as tmr
from torch.nn import functional

_EPS = 1e-15
CALIBRATION_BINS = 15


def roc_auc(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of binary labels and positive-class scores; NaN when only one
    class is present (the AUC is undefined there)."""
    target = _labels(y_true)
    if not _both_classes(target):
        return math.nan
    return float(tmc.binary_auroc(_floats(scores), target))


def binary_metrics(
    y_true: np.ndarray, scores: np.ndarray, threshold: float = 0.5
) -> dict[str, float]:
    """Accuracy, precision, recall, F1 at `threshold`; ROC-AUC, PR-AUC (average precision),
    log loss and calibration error of the scores."""
    target, preds = _labels(y_true), _floats(scores)
    predicted = (preds >= threshold).long()
    positives = bool(target.any())
    both = _both_classes(target)
    nan = math.nan
    return {
        "accuracy": _value(tmc.binary_accuracy(predicted, target)),
        "precision": _value(tmc.binary_precision(predicted, target)),
        "recall": _value(tmc.binary_recall(predicted, target)) if positives else nan,
        "f1": _value(tmc.binary_f1_score(predicted, target)) if positives else nan,
        "roc_auc": _value(tmc.binary_auroc(preds, target)) if both else nan,
        "pr_auc": _value(tmc.binary_average_precision(preds, target)) if both else nan,
        "log_loss": _value(functional.binary_cross_entropy(
            preds.clamp(_EPS, 1 - _EPS), target.double())),
        "calibration_error": _value(tmc.binary_calibration_error(
            preds, target, n_bins=CALIBRATION_BINS)),
    }


def multiclass_metrics(y_true: np.ndarray, probabilities: np.ndarray) -> dict[str, float]:
    """Accuracy; macro precision, recall and F1; macro one-vs-rest ROC-AUC and PR-AUC (macro
    is torchmetrics' default average); log loss and top-class calibration error."""
    target, preds = _labels(y_true), _floats(probabilities)
    classes = preds.shape[1]
    every_class = bool(torch.bincount(target, minlength=classes).all())
    nan = math.nan
    predicted = preds.argmax(dim=1)
    picked = preds.clamp(_EPS, 1.0)
    return {
        "accuracy": _value(tmc.multiclass_accuracy(predicted, target, classes, average="micro")),
        "macro_precision": _value(tmc.multiclass_precision(predicted, target, classes)),
        "macro_recall": _value(tmc.multiclass_recall(predicted, target, classes)),
        "macro_f1": _value(tmc.multiclass_f1_score(predicted, target, classes)),
        "roc_auc": _value(tmc.multiclass_auroc(preds, target, classes)) if every_class else nan,
        "pr_auc": (_value(tmc.multiclass_average_precision(preds, target, classes))
                   if every_class else nan),
        "log_loss": _value(functional.nll_loss(picked.log(), target)),
        "calibration_error": _value(tmc.multiclass_calibration_error(
            preds, target, classes, n_bins=CALIBRATION_BINS)),
    }


def regression_metrics(y_true: np.ndarray, predictions: np.ndarray) -> dict[str, float]:
    """Mean squared error, its root, mean absolute error, and R²."""
    target, preds = _floats(y_true), _floats(predictions)
    mse = _value(tmr.mean_squared_error(preds, target))
    defined = len(target) >= 2 and bool((target != target[0]).any())
    return {
        "mse": mse,
        "rmse": math.sqrt(mse),
        "mae": _value(tmr.mean_absolute_error(preds, target)),
        "r2": _value(tmr.r2_score(preds, target)) if defined else math.nan,
    }


def confusion_matrix(
    y_true: np.ndarray, scores: np.ndarray, task: str, threshold: float = 0.5
) -> list[list[int]]:
    """Counts of (true class, predicted class): rows are true classes, columns predictions
    (binary: negative first)."""
    target, preds = _labels(y_true), _floats(scores)
    if task == "binary":
        matrix = tmc.binary_confusion_matrix((preds >= threshold).long(), target)
    else:
        matrix = tmc.multiclass_confusion_matrix(preds.argmax(dim=1), target, preds.shape[1])
    return [[int(count) for count in row] for row in matrix.tolist()]


def _labels(values: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(values).astype(np.int64))


def _floats(values: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(values, dtype=np.float64))


def _both_classes(target: torch.Tensor) -> bool:
    return bool(target.any()) and not bool(target.all())


def _value(tensor: torch.Tensor) -> float:
    return float(tensor.item())
