"""The evaluation metrics of each task, by name: what a spec's gates and monitors may name,
checked without numpy (`trainforge validate`)."""

from __future__ import annotations

BINARY_METRICS = ("accuracy", "precision", "recall", "f1", "roc_auc", "log_loss")
MULTICLASS_METRICS = ("accuracy", "macro_f1", "log_loss")
REGRESSION_METRICS = ("mse", "mae", "r2")
METRICS_BY_TASK = {
    "binary": BINARY_METRICS,
    "multiclass": MULTICLASS_METRICS,
    "regression": REGRESSION_METRICS,
}
