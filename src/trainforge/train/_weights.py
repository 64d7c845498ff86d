"""Model weights on disk as safetensors: no pickle, so a swapped file cannot run code."""

from __future__ import annotations

from pathlib import Path

from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from trainforge.errors import TrainingError


def save_weights(model: nn.Module, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {name: tensor.detach().cpu().contiguous()
             for name, tensor in model.state_dict().items()}
    save_file(state, str(path))
    return path


def load_weights(model: nn.Module, path: str | Path) -> nn.Module:
    try:
        state = load_file(str(path))
    except (OSError, ValueError, SafetensorError) as exc:
        raise TrainingError(f"{path}: cannot read safetensors weights: {exc}") from exc
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise TrainingError(f"{path}: weights do not fit the model: {exc}") from exc
    return model
