"""A model's scores: its raw outputs as probabilities (binary, multiclass) or predictions
(regression). Torch only, no metrics: serving and re-scoring a production model import it."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


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
