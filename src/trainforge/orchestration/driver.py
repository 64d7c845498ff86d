"""`drive`: the one path from "run this DAG as a tracked run's pipeline run" to its outcome,
for the standard training chain (`pipeline.run_pipeline`, its resumes and tuning trials) and
for user pipelines (`run_steps`, `resume_steps`).

The tracked run names its pipeline run (`system.pipeline_run`) once the runner has written
that row, so whoever reads the name finds the row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainforge.entities import PipelineRun
from trainforge.orchestration.dag import Dag
from trainforge.orchestration.executors import ExecutorChoice, executor_for
from trainforge.orchestration.runner import (
    InProcessRunner,
    PipelineOutcome,
    RunOptions,
    StepListener,
)
from trainforge.orchestration.values import value_store
from trainforge.session import Session
from trainforge.tracking import RunHandle, SystemRecord


def drive(dag: Dag, session: Session, run: RunHandle, *,
          source: Mapping[str, Any] | None = None, resume: str | None = None,
          pipeline_run_id: str | None = None, options: RunOptions | None = None,
          listener: StepListener | None = None,
          executors: ExecutorChoice | None = None) -> PipelineOutcome:
    """Run `dag` as a new pipeline run (`pipeline_run_id`, or a new id) recording to `run`,
    or continue the pipeline run `resume`, in `session` (its store, value store and
    credentials), each step where `executors` puts it (by default `executor_for`);
    `PipelineFailed` as `InProcessRunner.run`."""
    runner = InProcessRunner(session.store, value_store(session), recorder=run,
                             settings=session.settings, listener=listener,
                             executors=executors or executor_for)

    def named(record: PipelineRun) -> None:
        run.set_system(SystemRecord(pipeline_run=record.pipeline_run_id))

    return runner.run(dag, options=options, source=source, resume=resume,
                      pipeline_run_id=pipeline_run_id, on_start=named)
