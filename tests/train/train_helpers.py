"""Small data sets, a metric recorder and a parameter snapshot callback for the trainer tests."""

from __future__ import annotations

import numpy as np
import torch

from trainforge.config import ModelSpec, TrainingSpec
from trainforge.models import build_model
from trainforge.train import Callback, Trainer


class Recorder:
    """A metric sink that keeps every point."""

    def __init__(self) -> None:
        self.points: list[tuple[str, float, int]] = []

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.points.extend((k, v, step) for k, v in metrics.items())

    def series(self, key: str) -> list[tuple[int, float]]:
        return [(step, value) for k, value, step in self.points if k == key]

    def values(self, key: str) -> list[float]:
        return [value for _, value in self.series(key)]


class ParamSnapshots(Callback):
    """The flattened parameters after every optimizer step."""

    def __init__(self) -> None:
        self.after_step: list[torch.Tensor] = []

    def on_step_end(self, trainer: Trainer) -> None:
        vector = torch.cat([p.detach().flatten() for p in trainer.module.parameters()])
        self.after_step.append(vector.clone())


class GradSnapshots(Callback):
    """The flattened gradients each optimizer step applies (read just before the step)."""

    def __init__(self) -> None:
        self.applied: list[torch.Tensor] = []

    def on_fit_start(self, trainer: Trainer) -> None:
        def record(optimizer, args, kwargs) -> None:
            grads = [p.grad.flatten() for p in trainer.module.parameters()]
            self.applied.append(torch.cat(grads).clone())

        trainer.optimizer.register_step_pre_hook(record)


def blobs(task: str, n: int = 600, seed: int = 0, features: int = 4):
    """(train, val) arrays of a learnable problem of `task`, split half and half."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    if task == "binary":
        y = (x[:, 0] * x[:, 1] + x[:, 2] > 0).astype(np.float32)
    elif task == "multiclass":
        y = np.digitize(x[:, 0] + x[:, 1], [-0.7, 0.7]).astype(np.int64)
    else:
        y = (2 * x[:, 0] - x[:, 3]).astype(np.float32)
    return (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :])


def model_for(task: str, hidden=(16,), dropout: float = 0.0, features: int = 4, seed: int = 0):
    torch.manual_seed(seed)
    out = 3 if task == "multiclass" else 1
    return build_model(ModelSpec(task=task, hidden=list(hidden), dropout=dropout), features, out)


def make_trainer(task: str = "binary", data=None, recorder=None, callbacks=(), model=None,
                 checkpoint_dir=None, resume: bool = False, preemption=None,
                 **training) -> Trainer:
    """A CPU trainer on `blobs(task)`; `training` overrides TrainingSpec fields."""
    train, val = data or blobs(task)
    settings = {"epochs": 2, "batch_size": 32, "seed": 0, "device": "cpu", "progress": "off",
                **training}
    return Trainer(model or model_for(task), train, val, TrainingSpec(**settings), task,
                   recorder, callbacks=callbacks, checkpoint_dir=checkpoint_dir, resume=resume,
                   preemption=preemption)
