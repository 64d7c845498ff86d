"""Evaluation metrics as pure numpy functions of (true labels, model outputs).

Binary: `scores` are probabilities of the positive class. Multiclass: `scores` are class
probabilities of shape (n, classes). Regression: `scores` are predictions.
"""

from __future__ import annotations

import numpy as np


def roc_auc(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve by the rank-sum formula, ties given their average rank.

    NaN when only one class is present (the AUC is undefined there).
    """
    y_true = np.asarray(y_true).astype(bool)
    positives = int(y_true.sum())
    negatives = y_true.size - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = np.asarray(scores)[order]
    ranks = np.empty(len(order), dtype=np.float64)
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    average = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(average, counts)
    rank_sum = ranks[y_true].sum()
    return float((rank_sum - positives * (positives + 1) / 2) / (positives * negatives))


def binary_metrics(
    y_true: np.ndarray, scores: np.ndarray, threshold: float = 0.5
) -> dict[str, float]:
    y_true = np.asarray(y_true).astype(bool)
    predicted = np.asarray(scores) >= threshold
    tp = float(np.sum(predicted & y_true))
    fp = float(np.sum(predicted & ~y_true))
    fn = float(np.sum(~predicted & y_true))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    clipped = np.clip(scores, 1e-7, 1 - 1e-7)
    log_loss = -np.mean(np.where(y_true, np.log(clipped), np.log(1 - clipped)))
    return {
        "accuracy": float(np.mean(predicted == y_true)),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "roc_auc": roc_auc(y_true, scores),
        "log_loss": float(log_loss),
    }


def multiclass_metrics(y_true: np.ndarray, probabilities: np.ndarray) -> dict[str, float]:
    y_true = np.asarray(y_true).astype(np.int64)
    predicted = probabilities.argmax(axis=1)
    f1s = []
    for cls in range(probabilities.shape[1]):
        tp = np.sum((predicted == cls) & (y_true == cls))
        denominator = np.sum(predicted == cls) + np.sum(y_true == cls)
        f1s.append(2 * tp / denominator if denominator else 0.0)
    picked = np.clip(probabilities[np.arange(len(y_true)), y_true], 1e-7, 1.0)
    return {
        "accuracy": float(np.mean(predicted == y_true)),
        "macro_f1": float(np.mean(f1s)),
        "log_loss": float(-np.mean(np.log(picked))),
    }


def regression_metrics(y_true: np.ndarray, predictions: np.ndarray) -> dict[str, float]:
    y_true = np.asarray(y_true, dtype=np.float64)
    error = np.asarray(predictions, dtype=np.float64) - y_true
    total = np.sum((y_true - y_true.mean()) ** 2)
    return {
        "mse": float(np.mean(error**2)),
        "mae": float(np.mean(np.abs(error))),
        "r2": float(1 - np.sum(error**2) / total) if total else float("nan"),
    }
