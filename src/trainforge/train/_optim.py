"""Optimizers, learning-rate schedules with warmup and gradient clipping, built from the spec.

The schedule is a pure function of the optimizer step (`lr_factor`), applied by `LRSchedule`
before each step, so a resumed run only needs the step count back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Optional

import torch

from trainforge.config import ClipSpec, OptimizerSpec, ScheduleSpec
from trainforge.errors import TrainingError

Clipper = Callable[[list[torch.Tensor], Optional[float]], None]
_OPTIMIZERS = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "sgd": torch.optim.SGD}


def build_optimizer(
    spec: OptimizerSpec, params: Sequence[torch.nn.Parameter], device: torch.device
) -> torch.optim.Optimizer:
    """The optimizer `spec` names over `params`; `auto` picks fused kernels on CUDA, foreach
    elsewhere."""
    if spec.name not in _OPTIMIZERS:
        known = ", ".join(_OPTIMIZERS)
        raise TrainingError(f"training.optimizer.name: expected one of {known}, got {spec.name!r}")
    options: dict[str, Any] = {"lr": spec.lr, "weight_decay": spec.weight_decay}
    if spec.name == "sgd":
        options["momentum"] = spec.momentum
    else:
        options.update(betas=tuple(spec.betas), eps=spec.eps)
    options.update(_implementation(spec.implementation, device))
    try:
        return _OPTIMIZERS[spec.name](params, **options)
    except (RuntimeError, ValueError) as exc:
        raise TrainingError(
            f"training.optimizer: cannot build {spec.name} ({spec.implementation}) on "
            f"{device.type}: {exc}"
        ) from exc


def _implementation(name: str, device: torch.device) -> dict[str, bool]:
    if name == "auto":
        name = "fused" if device.type == "cuda" else "foreach"
    return {"fused": {"fused": True}, "foreach": {"foreach": True},
            "for_loop": {"foreach": False}}[name]


def lr_factor(spec: ScheduleSpec, step: int, total_steps: int, base_lr: float) -> float:
    """The learning rate of optimizer step `step` (0-based) as a fraction of `base_lr`.

    Warmup: (step + 1) / warmup_steps, reaching 1 on its last step (one_cycle: a cosine rise
    from 1 / div_factor). Then, with progress p from 0 (first step after warmup) to 1 (last
    step of `total_steps`): constant 1; step gamma ** (steps since warmup // step_size);
    cosine and linear from 1 down to min_lr / base_lr.
    """
    floor = spec.min_lr / base_lr
    warmup = spec.warmup_steps
    if spec.name == "one_cycle":
        warmup = warmup or max(1, round(spec.pct_start * total_steps))
        if step < warmup:
            start = 1 / spec.div_factor
            return start + (1 - start) * _cosine_rise(step / max(1, warmup - 1))
    elif step < warmup:
        return (step + 1) / warmup
    after = step - warmup
    progress = min(1.0, after / max(1, total_steps - warmup - 1))
    if spec.name == "constant":
        return 1.0
    if spec.name == "step":
        return spec.gamma ** (after // spec.step_size)
    if spec.name == "linear":
        return 1.0 - (1.0 - floor) * progress
    return floor + (1.0 - floor) * (1 - _cosine_rise(progress))


def _cosine_rise(progress: float) -> float:
    """0 at progress 0, 1 at progress 1, along half a cosine."""
    return 0.5 * (1 - math.cos(math.pi * progress))


class LRSchedule:
    """Sets every parameter group's lr to base lr × `lr_factor` before each optimizer step.

    `last_lr` is the learning rate the latest step used (the one to log for it). A constant
    schedule without warmup never changes the learning rate, so its steps only count.
    """

    def __init__(self, spec: ScheduleSpec, optimizer: torch.optim.Optimizer, total_steps: int):
        self.spec = spec
        self.optimizer = optimizer
        self.total_steps = max(1, total_steps)
        self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.steps = 0
        self.last_lr = self.base_lrs[0]
        self._fixed = spec.name == "constant" and spec.warmup_steps == 0
        self._apply()

    def step(self) -> None:
        """Called after an optimizer step: set the learning rate of the next one."""
        self.last_lr = self.optimizer.param_groups[0]["lr"]
        self.steps += 1
        if not self._fixed:
            self._apply()

    def _apply(self) -> None:
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = base * lr_factor(self.spec, self.steps, self.total_steps, base)

    def state_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "base_lrs": list(self.base_lrs), "last_lr": self.last_lr,
                "total_steps": self.total_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue the saved schedule, over the saved total steps (a job resumed at another
        world size may count its epochs' steps differently at their ends)."""
        self.total_steps = int(state.get("total_steps", self.total_steps))
        self.steps = int(state["steps"])
        self.base_lrs = [float(lr) for lr in state["base_lrs"]]
        self.last_lr = float(state["last_lr"])
        self._apply()


def make_clipper(spec: ClipSpec | None) -> Clipper:
    """A function clipping gradients in place, given them and their total norm (a float the
    trainer reads every step when clipping, so clipping by norm needs no extra device read)."""
    if spec is None:
        return _no_clip
    limit = spec.max
    if spec.mode == "norm":
        def clip_norm(grads: list[torch.Tensor], norm: float | None) -> None:
            assert norm is not None, "the trainer reads the norm every step when clipping"
            coefficient = limit / (norm + 1e-6)
            if coefficient < 1.0:
                torch._foreach_mul_(grads, coefficient)

        return clip_norm

    def clip_value(grads: list[torch.Tensor], norm: float | None) -> None:
        torch._foreach_clamp_min_(grads, -limit)
        torch._foreach_clamp_max_(grads, limit)

    return clip_value


def _no_clip(grads: list[torch.Tensor], norm: float | None) -> None:
    """Clipping is off."""
