"""TensorBoard event files written next to the database, from the metric logger's thread."""

from __future__ import annotations

from pathlib import Path

from trainforge.entities import MetricPoint


class TensorBoardSink:
    """Writes metric points as TensorBoard scalars under `directory` (one folder per run).

    Called only from the metric logger's thread; `close` after that thread stopped.
    """

    def __init__(self, directory: str | Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise ImportError(
                "TensorBoard output needs the tensorboard package: "
                "pip install 'trainforge[tensorboard]'"
            ) from exc
        self.directory = Path(directory)
        self._writer = SummaryWriter(log_dir=str(self.directory))

    def __call__(self, points: list[MetricPoint]) -> None:
        for point in points:
            self._writer.add_scalar(point.key, point.value, point.step, walltime=point.timestamp)

    def close(self) -> None:
        self._writer.flush()
        self._writer.close()
