"""Preemption signals as a flag: the trainer checkpoints at the next step boundary and stops.

A scheduler (SLURM, Kubernetes, a spot-instance notice) sends SIGTERM, or a signal configured
in `training.checkpoint.preempt_on` such as SIGUSR1, some time before it kills the process.
While installed, `PreemptionSignals` only records that such a signal arrived; the handler does
no I/O, so it is safe at any instant of the training loop.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any


class PreemptionSignals:
    """Records the first of `names` that arrives while installed (`requested`, e.g. "SIGTERM").

    Handlers can only be set in the main thread; elsewhere `install` does nothing and signals
    keep their previous handling.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.signals = [signal.Signals[name] for name in names]
        self.requested: str | None = None
        self._previous: dict[signal.Signals, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for number in self.signals:
            self._previous[number] = signal.signal(number, self._handle)

    def uninstall(self) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self.requested is None:
            self.requested = signal.Signals(number).name
