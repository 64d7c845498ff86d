"""The evaluate stage: a trained model's metrics on a held-out split."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from trainforge.config import EvaluationSpec
from trainforge.evaluate._metrics import binary_metrics, multiclass_metrics, regression_metrics


@dataclass(frozen=True)
class EvalReport:
    split: str
    metrics: dict[str, float]
    rows: int

    def prefixed(self) -> dict[str, float]:
        """Metrics named as the run records them: `test_roc_auc`, ..."""
        return {f"{self.split}_{key}": value for key, value in self.metrics.items()}


@torch.no_grad()
def predict_scores(
    model: nn.Module, features: np.ndarray, task: str, batch_size: int = 8192
) -> np.ndarray:
    """Probabilities (binary, multiclass) or predictions (regression), in eval mode."""
    model.eval()
    device = next(model.parameters()).device
    outputs = []
    for start in range(0, len(features), batch_size):
        batch = torch.from_numpy(features[start : start + batch_size]).to(device)
        outputs.append(outputs_to_scores(model(batch), task))
    return np.concatenate(outputs)


def outputs_to_scores(outputs: torch.Tensor, task: str) -> np.ndarray:
    """Raw model outputs (rows, out) as scores: probabilities (binary: of the positive class;
    multiclass: of each class) or predictions (regression)."""
    outputs = outputs.detach().float()
    if task == "binary":
        outputs = torch.sigmoid(outputs.squeeze(-1))
    elif task == "multiclass":
        outputs = torch.softmax(outputs, dim=-1)
    else:
        outputs = outputs.squeeze(-1)
    return outputs.cpu().numpy()


def evaluate_model(
    model: nn.Module,
    features: np.ndarray,
    targets: np.ndarray,
    task: str,
    spec: EvaluationSpec,
    split: str = "test",
) -> EvalReport:
    """Score `model` on (features, targets) with the metrics of its task."""
    return score_report(predict_scores(model, features, task), targets, task, spec, split)


def score_report(
    scores: np.ndarray, targets: np.ndarray, task: str, spec: EvaluationSpec, split: str
) -> EvalReport:
    """The metrics of `task` for scores (from `outputs_to_scores`) against the targets."""
    if task == "binary":
        metrics = binary_metrics(targets, scores, spec.threshold)
    elif task == "multiclass":
        metrics = multiclass_metrics(targets, scores)
    else:
        metrics = regression_metrics(targets, scores)
    return EvalReport(split=split, metrics=metrics, rows=len(targets))
