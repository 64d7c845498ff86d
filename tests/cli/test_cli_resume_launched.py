"""`trainforge resume PIPELINE_RUN` of a training pipeline run refuses one whose train step ran
on torchrun workers (it is continued with `trainforge run ... --nproc-per-node N --resume`),
as its launcher recorded in the run's system namespace; a user's tag of the same name decides
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from home import home_store
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.entities import Pipeline, PipelineRunStatus

SHAPE = {"nproc_per_node": 2, "nnodes": 1, "min_nodes": 1, "max_restarts": 0}


def failed_pipeline_run(tmp_path: Path, system: dict, tags: dict) -> tuple[str, str]:
    """(pipeline run id, run id) of a failed training pipeline run of `tmp_path/spec.yaml`."""
    store = home_store()
    try:
        experiment = store.get_or_create_experiment("fraud").experiment_id
        store.upsert_pipeline(Pipeline("fraud", "fraud", {}))
        run = store.create_run(experiment, {}, {}, "file:///a", pipeline_id="fraud",
                               system=system, tags=tags)
        spec = {"spec": {"path": str(tmp_path / "spec.yaml"), "overrides": []}}
        record = store.create_pipeline_run("p" * 32, "fraud", spec, {}, run.run_id)
        store.set_pipeline_run_status(record.pipeline_run_id, PipelineRunStatus.FAILED)
        return record.pipeline_run_id, run.run_id
    finally:
        store.close()


@pytest.mark.parametrize("recorded", ["system", "tag"])
def test_only_the_launchers_record_sends_a_resume_to_torchrun(tmp_path: Path,
                                                              recorded: str) -> None:
    system = {"distributed": SHAPE} if recorded == "system" else {}
    tags = {"distributed": SHAPE} if recorded == "tag" else {}
    pipeline_run, run_id = failed_pipeline_run(tmp_path, system, tags)
    result = CliRunner().invoke(app, ["resume", pipeline_run])
    assert result.exit_code == 2, result.output
    launched = (f"pipeline run {pipeline_run} trained on torchrun workers: continue it with "
                f"`trainforge run {tmp_path / 'spec.yaml'} --nproc-per-node N --resume {run_id}`")
    if recorded == "system":
        assert launched in result.output
    else:  # resumed in this process: the spec file is read (and here, missing)
        assert "torchrun" not in result.output and "spec.yaml" in result.output
