"""TensorBoard event files written next to the database, from the metric logger's thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from trainforge.entities import MetricPoint


class TensorBoardSink:
    """Writes metric points as TensorBoard scalars under `directory` (one folder per run); the
    event file is made at the first scalar, so a run that writes none leaves none.

    Called from the metric logger's thread, `summary` from the run's; `purge_after` while no
    points are being logged (a resume, after a flush); `close` after the logger's thread
    stopped.
    """

    def __init__(self, directory: str | Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise ImportError(
                "TensorBoard output needs the tensorboard package: "
                "pip install 'trainforge[tensorboard]'"
            ) from exc
        self._make_writer = SummaryWriter
        self.directory = Path(directory)
        self._writer: Any = None
        self._purge_step: int | None = None
        self._last_step = 0
        self._lock = threading.Lock()

    def __call__(self, points: list[MetricPoint]) -> None:
        with self._lock:
            for point in points:
                self._write(point.key, point.value, point.step, point.timestamp)
                self._last_step = max(self._last_step, point.step)

    def summary(self, metrics: dict[str, float]) -> None:
        """Final values (a run's test metrics, its threshold), as scalars at the last step."""
        with self._lock:
            now = time.time()
            for key, value in metrics.items():
                self._write(key, value, self._last_step, now)

    def purge_after(self, step: int) -> None:
        """Make TensorBoard drop the events after `step` that earlier files hold (a resumed
        run logs those steps again): the next event file starts with a purge marker."""
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            self._purge_step = step + 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()

    def _write(self, key: str, value: float, step: int, walltime: float) -> None:
        if self._writer is None:
            self._writer = self._make_writer(log_dir=str(self.directory),
                                             purge_step=self._purge_step)
        self._writer.add_scalar(key, value, step, walltime=walltime)
