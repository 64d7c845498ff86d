"""`torch.profiler` over a few optimizer steps, as a callback; the trace becomes an artifact.

The schedule skips `wait` steps, traces `warmup` steps it discards, then records `active`
steps. The Chrome trace (open it in chrome://tracing or Perfetto) is written to `directory`
and, when the trainer's sink takes artifacts, stored on the run as `profiler/trace.json`.
Only rank 0 profiles.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from trainforge.config import ProfilerSpec
from trainforge.train._callbacks import Callback
from trainforge.train._sinks import ArtifactSink

if TYPE_CHECKING:
    from trainforge.train._trainer import Trainer

log = logging.getLogger(__name__)
ARTIFACT_NAME = "profiler/trace.json"


class ProfilerCallback(Callback):
    """Profiles steps per `spec`; `trace` is the written trace file once recorded."""

    def __init__(self, spec: ProfilerSpec, directory: str | Path | None = None) -> None:
        self.spec = spec
        self.directory = Path(directory or tempfile.mkdtemp(prefix="trainforge-profile-"))
        self.trace: Path | None = None
        self._profile: torch.profiler.profile | None = None

    def on_fit_start(self, trainer: Trainer) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if trainer.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        schedule = torch.profiler.schedule(
            wait=self.spec.wait, warmup=self.spec.warmup, active=self.spec.active, repeat=1
        )
        self._profile = torch.profiler.profile(
            activities=activities, schedule=schedule, on_trace_ready=self._save
        )
        self._profile.start()

    def on_step_end(self, trainer: Trainer) -> None:
        assert self._profile is not None
        self._profile.step()

    def on_fit_end(self, trainer: Trainer) -> None:
        self._stop()
        if self.trace is None:
            log.warning("profiler: training ended before a step was recorded (wait %d, warmup "
                        "%d)", self.spec.wait, self.spec.warmup)
        elif isinstance(trainer.sink, ArtifactSink):
            trainer.sink.log_artifact(self.trace, ARTIFACT_NAME)

    def on_exception(self, trainer: Trainer, error: BaseException) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._profile is not None:
            self._profile.stop()
            self._profile = None

    def _save(self, profile: torch.profiler.profile) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "trace.json"
        profile.export_chrome_trace(str(path))
        self.trace = path
