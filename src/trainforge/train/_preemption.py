"""Preemption signals as a flag: the trainer checkpoints at the next step boundary and stops.

A scheduler (SLURM, Kubernetes, a spot-instance notice) sends SIGTERM, or a signal configured
in `training.checkpoint.preempt_on` such as SIGUSR1, some time before it kills the process.

Who does what:
- the entry point (`run_pipeline`, a torchrun worker, a user's script) installs the handlers
  for a block with `notice.installed()`; nothing below an entry point touches signal handling;
- a trainer given the notice arms it while it fits (`arm` / `disarm`) and reads `requested` at
  step boundaries;
- a signal that arrives while the notice is armed only records its name (the handler does no
  I/O, so it is safe at any instant of the training loop); while unarmed (before or after
  training) it gets the handling it had before the notice was installed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any


class PreemptionNotice:
    """The first of `names` that arrived while armed (`requested`, e.g. "SIGTERM").

    Handlers can only be set in the main thread; elsewhere `installed` does nothing and signals
    keep their previous handling.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.signals = [signal.Signals[name] for name in names]
        self.requested: str | None = None
        self._armed = False
        self._previous: dict[signal.Signals, Any] = {}

    @contextlib.contextmanager
    def installed(self) -> Iterator[PreemptionNotice]:
        """Entry points only: the handlers of `signals` for the block, then the previous ones."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        for number in self.signals:
            self._previous[number] = signal.signal(number, self._handle)
        try:
            yield self
        finally:
            for number, handler in self._previous.items():
                signal.signal(number, handler)
            self._previous.clear()

    def arm(self) -> None:
        self._armed = True

    def disarm(self) -> None:
        self._armed = False

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self._armed:
            if self.requested is None:
                self.requested = signal.Signals(number).name
            return
        previous = self._previous.get(signal.Signals(number), signal.SIG_DFL)
        if callable(previous):
            previous(number, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)  # what the signal would have done without the notice
