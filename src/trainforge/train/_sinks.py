"""Where the trainer reports: anything with `log_metrics(metrics, step)` (a tracked run's
`RunHandle`, or a plain recorder). A sink that also has `set_tags(tags)` gets the training
set-up recorded; one with `log_artifact(path, name)` gets artifacts (the profiler trace); a
`CheckpointSink` gets the checkpoints recorded and its metric series cut back on resume.
Under DDP/FSDP only rank 0 reports; other ranks report to `NullSink`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class MetricSink(Protocol):
    """Where the trainer reports metrics (a tracked run, or anything with this method)."""

    def log_metrics(self, metrics: dict[str, float], step: int) -> None: ...


@runtime_checkable
class TagSink(Protocol):
    def set_tags(self, tags: dict[str, Any]) -> None: ...


@runtime_checkable
class ArtifactSink(Protocol):
    def log_artifact(self, path: str | Path, name: str | None = None) -> str: ...


@runtime_checkable
class CheckpointSink(Protocol):
    """A run that records its checkpoints and can drop the points a resumed run logs again."""

    def flush(self, timeout: float | None = None) -> bool: ...

    def record_checkpoint(self, step: int, uri: str, epoch: int | None,
                          metrics: dict[str, float]) -> None: ...

    def mark_checkpoint_deleted(self, step: int) -> None: ...

    def truncate_metrics(self, after_step: int, keys: Sequence[str] | None = None) -> int: ...


class NullSink:
    """Accepts metrics and drops them."""

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        pass
