"""Numeric precision as one component (`Precision`): the autocast context, backward, unscale
and step.

- `fp32`: no autocast.
- `bf16-mixed`: autocast to bfloat16 on CPU or CUDA; weights and optimizer state stay fp32.
- `fp16-mixed`: autocast to float16 on CUDA, with a `GradScaler` that scales the loss, unscales
  the gradients before they are measured or clipped, and skips a step whose gradients overflow.
  Non-finite gradients are then the scaler's business, not an error (`handles_overflow`).

TF32 (`training.tf32`) is a CUDA switch for matmuls and convolutions; on CPU it changes nothing.
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager, Protocol

import torch

from trainforge.errors import TrainingError

PRECISIONS = ("fp32", "bf16-mixed", "fp16-mixed")
_NO_AUTOCAST = contextlib.nullcontext()


class Precision(Protocol):
    """The precision contract the trainer calls, in this order for each step: `autocast` around
    forward and loss, `backward`, `unscale`, then `step`.

    `AutocastPrecision` (fp32, bf16-mixed) and `ScaledPrecision` (fp16-mixed) satisfy it
    structurally; `make_precision` picks one. `handles_overflow`: non-finite gradients are the
    precision's business (it skips the step), so the trainer's NaN guard leaves them alone.
    """

    name: str
    handles_overflow: bool

    def autocast(self) -> ContextManager[Any]:
        """The context the forward pass and the loss run in."""

    def backward(self, loss: torch.Tensor) -> None:
        """Backward from `loss` (scaled, where the precision scales it)."""

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """Make the gradients true gradients (before measuring or clipping them)."""

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        """Apply the gradients; False when the step was skipped."""

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of it (the loss scale); {} when nothing."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()`."""


class AutocastPrecision:
    """fp32 or bf16-mixed: autocast (or not) and plain backward and step."""

    handles_overflow = False

    def __init__(self, name: str, device: torch.device, dtype: torch.dtype | None) -> None:
        self.name = name
        self.device = device
        self.dtype = dtype

    def autocast(self) -> ContextManager[Any]:
        if self.dtype is None:
            return _NO_AUTOCAST
        return torch.autocast(self.device.type, dtype=self.dtype)

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        pass

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        optimizer.step()
        return True

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class ScaledPrecision(AutocastPrecision):
    """fp16-mixed: autocast to float16 with a dynamic loss scale (CUDA)."""

    handles_overflow = True

    def __init__(self, device: torch.device) -> None:
        super().__init__("fp16-mixed", device, torch.float16)
        self.scaler = torch.amp.GradScaler(device.type)

    def backward(self, loss: torch.Tensor) -> None:
        self.scaler.scale(loss).backward()

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        scale = self.scaler.get_scale()
        self.scaler.step(optimizer)
        self.scaler.update()
        # The scaler lowers its scale exactly when it skipped the step (inf/NaN gradients).
        return self.scaler.get_scale() >= scale

    def state_dict(self) -> dict[str, Any]:
        return self.scaler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.scaler.load_state_dict(state)


def make_precision(name: str, device: torch.device, tf32: bool = False) -> Precision:
    """The precision component of `training.precision` on `device`; sets the TF32 switch."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    if name == "fp32":
        return AutocastPrecision(name, device, None)
    if name == "bf16-mixed":
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise TrainingError("training.precision: this CUDA device has no bfloat16 support; "
                                "use 'fp16-mixed'")
        return AutocastPrecision(name, device, torch.bfloat16)
    if name == "fp16-mixed":
        if device.type != "cuda":
            raise TrainingError(
                f"training.precision: 'fp16-mixed' needs a CUDA device (training runs on "
                f"{device.type}); use 'bf16-mixed' there"
            )
        return ScaledPrecision(device)
    known = ", ".join(PRECISIONS)
    raise TrainingError(f"training.precision: expected one of {known}, got {name!r}")
