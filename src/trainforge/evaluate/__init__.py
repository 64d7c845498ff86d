"""Evaluation: metrics per task (torchmetrics), the decision threshold, slice metrics, plots,
and the evaluate stage.

Names are imported on first use (`trainforge._lazy`): `METRICS_BY_TASK` comes without torch
or numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.evaluate._evaluate import (
        EvalReport,
        evaluate_model,
        pick_threshold,
        score_report,
    )
    from trainforge.evaluate._metrics import (
        binary_metrics,
        confusion_matrix,
        multiclass_metrics,
        regression_metrics,
        roc_auc,
    )
    from trainforge.evaluate._names import METRICS_BY_TASK
    from trainforge.evaluate._plots import render_plots
    from trainforge.evaluate._scores import outputs_to_scores, predict_scores
    from trainforge.evaluate._slices import SliceReport, slice_metrics
    from trainforge.evaluate._threshold import ThresholdChoice, choose_threshold

_EXPORTS = {
    "EvalReport": "trainforge.evaluate._evaluate",
    "METRICS_BY_TASK": "trainforge.evaluate._names",
    "SliceReport": "trainforge.evaluate._slices",
    "ThresholdChoice": "trainforge.evaluate._threshold",
    "binary_metrics": "trainforge.evaluate._metrics",
    "choose_threshold": "trainforge.evaluate._threshold",
    "confusion_matrix": "trainforge.evaluate._metrics",
    "evaluate_model": "trainforge.evaluate._evaluate",
    "multiclass_metrics": "trainforge.evaluate._metrics",
    "outputs_to_scores": "trainforge.evaluate._scores",
    "pick_threshold": "trainforge.evaluate._evaluate",
    "predict_scores": "trainforge.evaluate._scores",
    "regression_metrics": "trainforge.evaluate._metrics",
    "render_plots": "trainforge.evaluate._plots",
    "roc_auc": "trainforge.evaluate._metrics",
    "score_report": "trainforge.evaluate._evaluate",
    "slice_metrics": "trainforge.evaluate._slices",
}

__all__ = [
    "EvalReport",
    "METRICS_BY_TASK",
    "SliceReport",
    "ThresholdChoice",
    "binary_metrics",
    "choose_threshold",
    "confusion_matrix",
    "evaluate_model",
    "multiclass_metrics",
    "outputs_to_scores",
    "pick_threshold",
    "predict_scores",
    "regression_metrics",
    "render_plots",
    "roc_auc",
    "score_report",
    "slice_metrics",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
