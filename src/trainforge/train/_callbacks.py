"""Callbacks: objects the Trainer calls at named points of `fit()`.

Points, in order: `on_fit_start`, then per epoch `on_epoch_start`, `on_step_end` after every
optimizer step, `on_epoch_end` after validation; `on_fit_end` when training finished, or
`on_exception` when it raised. At `on_step_end` and `on_epoch_end` the trainer's
`state_dict()` describes a consistent point to resume from (checkpointing plugs in there). A
callback may end training early by setting `trainer.state.should_stop = True`.

Override only the points you need; `CallbackList` calls a point only on the callbacks that
override it, so an unused point costs nothing per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainforge.train._trainer import Trainer

POINTS = ("on_fit_start", "on_epoch_start", "on_step_end", "on_epoch_end", "on_fit_end")


class Callback:
    """Base class: every point does nothing."""

    def on_fit_start(self, trainer: Trainer) -> None:
        """Before the first epoch (also when resuming)."""

    def on_epoch_start(self, trainer: Trainer) -> None:
        """Before the epoch's first batch."""

    def on_step_end(self, trainer: Trainer) -> None:
        """After an optimizer step (or a skipped one) and its logging."""

    def on_epoch_end(self, trainer: Trainer) -> None:
        """After validation and early stopping; `trainer.state.epoch` is the next epoch."""

    def on_fit_end(self, trainer: Trainer) -> None:
        """After the last epoch, when training finished without an error."""

    def on_exception(self, trainer: Trainer, error: BaseException) -> None:
        """Training raised `error` (it is re-raised after every callback saw it)."""


class CallbackList:
    """Calls each point on the callbacks that override it, in the order given."""

    def __init__(self, callbacks: Sequence[Callback]) -> None:
        self.callbacks = list(callbacks)
        self._by_point = {
            point: [getattr(cb, point) for cb in self.callbacks
                    if getattr(type(cb), point) is not getattr(Callback, point)]
            for point in (*POINTS, "on_exception")
        }

    def on_fit_start(self, trainer: Trainer) -> None:
        for hook in self._by_point["on_fit_start"]:
            hook(trainer)

    def on_epoch_start(self, trainer: Trainer) -> None:
        for hook in self._by_point["on_epoch_start"]:
            hook(trainer)

    def on_step_end(self, trainer: Trainer) -> None:
        for hook in self._by_point["on_step_end"]:
            hook(trainer)

    def on_epoch_end(self, trainer: Trainer) -> None:
        for hook in self._by_point["on_epoch_end"]:
            hook(trainer)

    def on_fit_end(self, trainer: Trainer) -> None:
        for hook in self._by_point["on_fit_end"]:
            hook(trainer)

    def on_exception(self, trainer: Trainer, error: BaseException) -> None:
        for hook in self._by_point["on_exception"]:
            hook(trainer, error)
