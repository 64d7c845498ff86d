"""Evaluation: metrics per task, and the evaluate stage."""

from trainforge.evaluate._evaluate import (
    EvalReport,
    evaluate_model,
    outputs_to_scores,
    predict_scores,
    score_report,
)
from trainforge.evaluate._metrics import (
    METRICS_BY_TASK,
    binary_metrics,
    multiclass_metrics,
    regression_metrics,
    roc_auc,
)

__all__ = [
    "METRICS_BY_TASK",
    "EvalReport",
    "binary_metrics",
    "evaluate_model",
    "multiclass_metrics",
    "outputs_to_scores",
    "predict_scores",
    "regression_metrics",
    "roc_auc",
    "score_report",
]
