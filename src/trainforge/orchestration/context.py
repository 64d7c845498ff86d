"""`StepContext`: what a step gets beside its data. The runner makes one per attempt; a step
asks for it by an argument annotated `StepContext` (or named `ctx` / `context`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from trainforge.tracking import RunRecorder


@dataclass(frozen=True)
class StepContext:
    """`recorder`: the tracked run the pipeline records to (None when it records to none);
    `artifact_uri`: where this step's artifacts go (`<run artifacts>/steps/<step>`), None
    without a run; `attempt`: 1 for the first try; `log`: the step's logger
    (`trainforge.step.<name>`)."""

    step: str
    pipeline_run_id: str
    attempt: int
    recorder: RunRecorder | None
    artifact_uri: str | None
    log: logging.Logger

    @classmethod
    def make(cls, step: str, pipeline_run_id: str, attempt: int,
             recorder: RunRecorder | None) -> StepContext:
        return cls(step, pipeline_run_id, attempt, recorder,
                   recorder.artifact_uri(f"steps/{step}") if recorder is not None else None,
                   logging.getLogger(f"trainforge.step.{step}"))
