"""TensorBoard event files written next to the database, from the metric logger's thread."""

from __future__ import annotations

import threading
from pathlib import Path

from trainforge.entities import MetricPoint


class TensorBoardSink:
    """Writes metric points as TensorBoard scalars under `directory` (one folder per run).

    Called from the metric logger's thread; `purge_after` from the run's thread while no points
    are being logged (a resume, after a flush); `close` after the logger's thread stopped.
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
        self._writer = SummaryWriter(log_dir=str(self.directory))
        self._lock = threading.Lock()

    def __call__(self, points: list[MetricPoint]) -> None:
        with self._lock:
            for point in points:
                self._writer.add_scalar(point.key, point.value, point.step,
                                        walltime=point.timestamp)

    def purge_after(self, step: int) -> None:
        """Make TensorBoard drop the events after `step` that earlier files hold (a resumed
        run logs those steps again): a new event file that starts with a purge marker."""
        with self._lock:
            self._writer.close()
            self._writer = self._make_writer(log_dir=str(self.directory), purge_step=step + 1)

    def close(self) -> None:
        self._writer.flush()
        self._writer.close()
