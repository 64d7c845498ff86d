"""The evaluation metrics of each task, by name: what a spec's gates and monitors may name,
checked without numpy (`trainforge validate`)."""

from __future__ import annotations

BINARY_METRICS = ("accuracy", "precision", "recall", "f1", "roc_auc", "pr_auc", "log_loss",
                  "calibration_error")
MULTICLASS_METRICS = ("accuracy", "macro_precision", "macro_recall", "macro_f1", "roc_auc",
                      "pr_auc", "log_loss", "calibration_error")
REGRESSION_METRICS = ("mse", "rmse", "mae", "r2")
METRICS_BY_TASK = {
    "binary": BINARY_METRICS,
    "multiclass": MULTICLASS_METRICS,
    "regression": REGRESSION_METRICS,
}
