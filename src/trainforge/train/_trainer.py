"""The Trainer: fit a model on in-memory tensors, logging to a run.

`fit()` reads top to bottom; the loss, the optimizer and the batching are built from the spec
by small functions it calls.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from trainforge.config import EvaluationSpec, TrainingSpec
from trainforge.errors import TrainingError
from trainforge.evaluate import evaluate_model
from trainforge.train._batches import TensorBatches

log = logging.getLogger(__name__)


class MetricSink(Protocol):
    """Where the trainer reports metrics (a tracked run, or anything with this method)."""

    def log_metrics(self, metrics: dict[str, float], step: int) -> None: ...


@dataclass
class TrainResult:
    model: nn.Module
    epochs: int
    steps: int
    history: list[dict[str, float]] = field(default_factory=list)
    wall_s: float = 0.0


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise TrainingError("training.device: 'cuda' requested but no CUDA device is available")
    return torch.device(name)


def make_loss(task: str, pos_weight: float | None) -> nn.Module:
    if task == "binary":
        weight = torch.tensor(pos_weight) if pos_weight else None
        return nn.BCEWithLogitsLoss(pos_weight=weight)
    if task == "multiclass":
        return nn.CrossEntropyLoss()
    return nn.MSELoss()


def _as_target(task: str, targets: np.ndarray) -> torch.Tensor:
    if task == "multiclass":
        return torch.from_numpy(np.asarray(targets, dtype=np.int64))
    return torch.from_numpy(np.asarray(targets, dtype=np.float32))


class Trainer:
    """Trains `model` on (features, targets) arrays with the settings of a `TrainingSpec`."""

    def __init__(
        self,
        model: nn.Module,
        train_data: tuple[np.ndarray, np.ndarray],
        val_data: tuple[np.ndarray, np.ndarray],
        config: TrainingSpec,
        task: str,
        run: MetricSink | None = None,
        evaluation: EvaluationSpec | None = None,
    ) -> None:
        self.config = config
        self.task = task
        self.run = run
        self.evaluation = evaluation or EvaluationSpec()
        self.device = resolve_device(config.device)
        torch.manual_seed(config.seed)
        self.model = model.to(self.device)
        self.val_data = val_data
        self.batches = TensorBatches(
            torch.from_numpy(train_data[0]).to(self.device),
            _as_target(task, train_data[1]).to(self.device),
            batch_size=config.batch_size,
            shuffle=True,
            seed=config.seed,
        )
        self.loss_fn = make_loss(task, config.pos_weight).to(self.device)
        opt = config.optimizer
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=opt.lr, weight_decay=opt.weight_decay
        )

    def fit(self) -> TrainResult:
        result = TrainResult(model=self.model, epochs=0, steps=0)
        started = time.perf_counter()
        for epoch in range(self.config.epochs):
            # 1. one pass over the shuffled training rows, a logged loss per step
            self.model.train()
            epoch_loss = 0.0
            for features, targets in self.batches.epoch(epoch):
                result.steps += 1
                loss = self._train_step(features, targets, result.steps)
                epoch_loss += loss
                self._log({"train_loss": loss}, result.steps)
            # 2. validation metrics once per epoch
            summary = {"epoch": float(epoch + 1), "train_loss_epoch": epoch_loss / len(self.batches)}
            summary.update(self._validate())
            self._log(summary, result.steps)
            result.history.append(summary)
            result.epochs = epoch + 1
            log.info("epoch %d/%d %s", epoch + 1, self.config.epochs, _format(summary))
        result.wall_s = time.perf_counter() - started
        return result

    def _train_step(self, features: torch.Tensor, targets: torch.Tensor, step: int) -> float:
        output = self.model(features)
        if self.task != "multiclass":
            output = output.squeeze(-1)
        loss = self.loss_fn(output, targets)
        value = loss.item()
        if not np.isfinite(value):
            raise TrainingError(
                f"training loss became {value} at step {step}; try a lower training.optimizer.lr"
            )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return value

    def _validate(self) -> dict[str, float]:
        features, targets = self.val_data
        report = evaluate_model(self.model, features, targets, self.task, self.evaluation, "val")
        with torch.no_grad():
            output = self.model(torch.from_numpy(features).to(self.device))
            if self.task != "multiclass":
                output = output.squeeze(-1)
            val_loss = self.loss_fn(output, _as_target(self.task, targets).to(self.device)).item()
        return {"val_loss": val_loss, **report.prefixed()}

    def _log(self, metrics: dict[str, Any], step: int) -> None:
        if self.run is not None:
            self.run.log_metrics(metrics, step)


def _format(metrics: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if k != "epoch")
