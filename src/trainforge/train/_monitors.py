"""What the trainer watches: non-finite losses and gradients, throughput and early stopping
(the metrics it logs are named in `_metric_names`)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from trainforge.config import EarlyStoppingSpec
from trainforge.errors import TrainingError

log = logging.getLogger(__name__)


class NanGuard:
    """Checks each optimizer step before it is applied, from the values the trainer read.

    The loss is read every step; the gradient norm too when the trainer needs it per step
    (on_nan: skip, or clipping), else `norm` is None: a non-finite gradient then shows as a
    non-finite loss one step later, still before that step is applied, and the parameter it
    spoiled is named by its value. Under DDP/FSDP the values are already combined over ranks,
    so every rank decides alike.

    `on_nan: error` raises `TrainingError` naming the step and the first offending parameter
    (in the model's order: the first non-finite value, else the first non-finite gradient);
    `skip` logs that, counts the step in `skipped` and returns False so the trainer drops it.
    With `check_grads=False` (fp16 with a loss scaler, which skips overflowing steps itself)
    only the loss is checked.
    """

    def __init__(
        self,
        on_nan: str,
        named_parameters: Sequence[tuple[str, torch.nn.Parameter]],
        check_grads: bool = True,
    ) -> None:
        self.on_nan = on_nan
        self.named_parameters = list(named_parameters)
        self.check_grads = check_grads
        self.skipped = 0

    def check(self, loss: float, norm: float | None, where: Callable[[], str]) -> bool:
        """True when the step may be applied; `where()` names it for the message."""
        if math.isfinite(loss) and (norm is None or not self.check_grads or math.isfinite(norm)):
            return True
        message = self._describe(loss, where())
        if self.on_nan == "error":
            raise TrainingError(
                f"{message}; try a lower training.optimizer.lr, training.clip, or "
                "training.on_nan=skip"
            )
        self.skipped += 1
        log.warning("%s; step skipped (training.on_nan=skip)", message)
        return False

    def _describe(self, loss: float, where: str) -> str:
        head = (f"training loss became {loss} at {where}" if not math.isfinite(loss)
                else f"a gradient became non-finite at {where} (loss {loss:.6g})")
        offender = self._first_offender()
        if offender is None:
            return f"{head}; no parameter has a non-finite value or gradient on this rank"
        return f"{head}; first offending parameter: {offender}"

    def _first_offender(self) -> str | None:
        for kind in ("value", "gradient"):
            for name, param in self.named_parameters:
                tensor = param.detach() if kind == "value" else param.grad
                if tensor is None:
                    continue
                full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
                bad = ~torch.isfinite(full)
                if bad.any():
                    sample = full[bad].flatten()[0].item()
                    cause = ", set by the previous step's update" if kind == "value" else ""
                    return f"{name!r} ({kind} {sample}, {int(bad.sum())} of {full.numel()}{cause})"
        return None


class Throughput:
    """Samples per second and seconds per step between two measurements."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self.reset()

    def reset(self) -> None:
        self._since = time.perf_counter()

    def measure(self, rows: int, steps: int) -> dict[str, float]:
        """`rows` this rank trained on in `steps` optimizer steps since the last call."""
        now = time.perf_counter()
        elapsed = max(now - self._since, 1e-9)
        self._since = now
        return {
            "samples_per_s": rows * self.world_size / elapsed,
            "step_time_s": elapsed / max(steps, 1),
        }


class EarlyStopping:
    """Stops training after `patience` epochs in which `metric` did not improve by more than
    `min_delta` on the best value so far (lower for mode min, higher for max). NaN never
    improves."""

    def __init__(self, spec: EarlyStoppingSpec) -> None:
        self.spec = spec
        self.best: float | None = None
        self.wait = 0

    def update(self, metrics: Mapping[str, float]) -> bool:
        """Look at the epoch's metrics; True when training should stop now."""
        if self.spec.metric not in metrics:
            raise TrainingError(
                f"training.early_stopping.metric: {self.spec.metric!r} was not logged "
                f"(logged: {', '.join(sorted(metrics))})"
            )
        value = float(metrics[self.spec.metric])
        if self._improves(value):
            self.best, self.wait = value, 0
            return False
        self.wait += 1
        return self.wait >= self.spec.patience

    def _improves(self, value: float) -> bool:
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        if self.spec.mode == "min":
            return value < self.best - self.spec.min_delta
        return value > self.best + self.spec.min_delta

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "wait": self.wait}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.best = None if state["best"] is None else float(state["best"])
        self.wait = int(state["wait"])


class NoEarlyStopping(EarlyStopping):
    """Early stopping switched off: never stops, keeps no best value."""

    def __init__(self) -> None:
        self.best = None
        self.wait = 0

    def update(self, metrics: Mapping[str, float]) -> bool:
        return False
