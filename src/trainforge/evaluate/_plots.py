"""PNG plots of an evaluation: ROC and precision-recall curves, the confusion matrix, a
reliability diagram (classification), and a headline metric per slice.

matplotlib is imported here only, and drawn through its Agg canvas on a fresh `Figure`, so no
pyplot state or backend setting of the process is touched. A curve its rows cannot define
(one class only) is left out, never an error.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torchmetrics.functional.classification as tmc
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from trainforge.evaluate._evaluate import EvalReport
from trainforge.evaluate._metrics import CALIBRATION_BINS

HEADLINE = {"binary": ("roc_auc", "accuracy"), "multiclass": ("roc_auc", "accuracy"),
            "regression": ("mae",)}


def render_plots(
    scores: np.ndarray, targets: np.ndarray, task: str, report: EvalReport,
    classes: Sequence[object] = (),
) -> dict[str, bytes]:
    """PNG bytes by file name (`roc.png`, `pr.png`, `confusion_matrix.png`,
    `calibration.png`, `slice_<column>.png`) for scores and targets as `score_report` took
    them; `classes` name the class ids on the axes."""
    plots: dict[str, Figure] = {}
    if task != "regression":
        preds = torch.from_numpy(np.asarray(scores, dtype=np.float64))
        target = torch.from_numpy(np.asarray(targets).astype(np.int64))
        names = [str(c) for c in classes] or (["0", "1"] if task == "binary" else
                                              [str(i) for i in range(preds.shape[1])])
        plots |= _curves(preds, target, task, names)
        if report.confusion_matrix is not None:
            plots["confusion_matrix.png"] = _confusion(report.confusion_matrix, names)
        plots["calibration.png"] = _calibration(preds, target, task)
    for column, slices in report.slices.items():
        plots[f"slice_{_file_part(column)}.png"] = _per_slice(column, slices, task)
    return {name: _png(figure) for name, figure in plots.items()}


def _curves(preds: torch.Tensor, target: torch.Tensor, task: str,
            names: list[str]) -> dict[str, Figure]:
    """ROC and PR curves: one (binary) or one per class present with others (multiclass)."""
    curves: list[tuple[str, torch.Tensor, torch.Tensor]] = []
    for index, name in enumerate(names if task == "multiclass" else ["positive"]):
        positive = (target == index) if task == "multiclass" else target.bool()
        if not positive.any() or positive.all():
            continue
        column = preds[:, index] if task == "multiclass" else preds
        curves.append((name, column, positive.long()))
    if not curves:
        return {}
    roc, pr = Figure(figsize=(5, 5)), Figure(figsize=(5, 5))
    roc_axes, pr_axes = roc.add_subplot(), pr.add_subplot()
    for name, column, positive in curves:
        fpr, tpr, _ = tmc.binary_roc(column, positive)
        precision, recall, _ = tmc.binary_precision_recall_curve(column, positive)
        auc = float(tmc.binary_auroc(column, positive))
        ap = float(tmc.binary_average_precision(column, positive))
        roc_axes.plot(fpr.numpy(), tpr.numpy(), label=f"{name} (AUC {auc:.3f})")
        pr_axes.plot(recall.numpy(), precision.numpy(), label=f"{name} (AP {ap:.3f})")
    roc_axes.plot([0, 1], [0, 1], linestyle="--", color="grey")
    roc_axes.set(xlabel="false positive rate", ylabel="true positive rate", title="ROC")
    pr_axes.set(xlabel="recall", ylabel="precision", title="Precision-recall")
    roc_axes.legend(loc="lower right")
    pr_axes.legend(loc="lower left")
    return {"roc.png": roc, "pr.png": pr}


def _confusion(matrix: list[list[int]], names: list[str]) -> Figure:
    figure = Figure(figsize=(5, 5))
    axes = figure.add_subplot()
    counts = np.asarray(matrix)
    axes.imshow(counts, cmap="Blues")
    for (row, col), count in np.ndenumerate(counts):
        axes.text(col, row, str(count), ha="center", va="center",
                  color="white" if count > counts.max() / 2 else "black")
    ticks = range(len(names))
    axes.set_xticks(ticks, names, rotation=45, ha="right")
    axes.set_yticks(ticks, names)
    axes.set(xlabel="predicted", ylabel="true", title="Confusion matrix")
    figure.tight_layout()
    return figure


def _calibration(preds: torch.Tensor, target: torch.Tensor, task: str) -> Figure:
    """Mean confidence against observed frequency per equal-width bin (binary: of the positive
    class; multiclass: of the top class being right), as the calibration error bins them."""
    if task == "binary":
        confidence, hit = preds.numpy(), target.numpy().astype(float)
    else:
        top, predicted = preds.max(dim=1)
        confidence, hit = top.numpy(), (predicted == target).numpy().astype(float)
    bins = np.clip((confidence * CALIBRATION_BINS).astype(int), 0, CALIBRATION_BINS - 1)
    filled = np.bincount(bins, minlength=CALIBRATION_BINS) > 0
    counts = np.maximum(np.bincount(bins, minlength=CALIBRATION_BINS), 1)
    mean_confidence = np.bincount(bins, confidence, CALIBRATION_BINS) / counts
    frequency = np.bincount(bins, hit, CALIBRATION_BINS) / counts
    figure = Figure(figsize=(5, 5))
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfect")
    axes.plot(mean_confidence[filled], frequency[filled], marker="o", label="model")
    axes.set(xlabel="mean predicted probability", ylabel="observed frequency",
             title="Reliability diagram")
    axes.legend(loc="upper left")
    return figure


def _per_slice(column: str, slices: dict[str, dict[str, Any]], task: str) -> Figure:
    metric = next((name for name in HEADLINE[task]
                   if any(figures.get(name) is not None for figures in slices.values())),
                  HEADLINE[task][-1])
    labels = list(slices)
    values = [slices[label].get(metric) for label in labels]
    figure = Figure(figsize=(max(5.0, 0.6 * len(labels) + 2), 4))
    axes = figure.add_subplot()
    bars = axes.bar(range(len(labels)), [np.nan if v is None else v for v in values])
    axes.bar_label(bars, [f"n={slices[label]['rows']}" for label in labels], fontsize=8)
    axes.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    axes.set(ylabel=metric, title=f"{metric} per {column}")
    figure.tight_layout()
    return figure


def _file_part(column: str) -> str:
    """A column name as a file name part (letters, digits, `_`, `-`)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", column) or "_"


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()
