"""`trainforge resume RUN_ID|PIPELINE_RUN` of a training pipeline run: a run's id names its
pipeline run; a run its launcher recorded as trained on several nodes is refused (each node
continues it with `trainforge run ... --resume` and its launch flags), a user's tag of the same
name decides nothing; what names no pipeline run is refused saying so. (A single-node launched
run resumed over its torchrun workers: `test_cli_restart.py`.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from home import home_store
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.entities import Pipeline, PipelineRunStatus

SHAPE = {"nproc_per_node": 2, "nnodes": 2, "min_nodes": 2, "max_restarts": 0}


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
        store.set_system(run.run_id, {"pipeline_run": record.pipeline_run_id})
        store.set_pipeline_run_status(record.pipeline_run_id, PipelineRunStatus.FAILED)
        return record.pipeline_run_id, run.run_id
    finally:
        store.close()


@pytest.mark.parametrize("recorded", ["system", "tag"])
@pytest.mark.parametrize("named_by", ["run", "pipeline run"])
def test_only_the_launchers_record_refuses_a_multi_node_resume(
        tmp_path: Path, recorded: str, named_by: str) -> None:
    system = {"distributed": SHAPE} if recorded == "system" else {}
    tags = {"distributed": SHAPE} if recorded == "tag" else {}
    pipeline_run, run_id = failed_pipeline_run(tmp_path, system, tags)
    named = run_id[:8] if named_by == "run" else pipeline_run

    result = CliRunner().invoke(app, ["resume", named])

    assert result.exit_code == 2, result.output
    if recorded == "system":
        assert (f"run {run_id} trained on 2 nodes: continue it with `trainforge run "
                f"{tmp_path / 'spec.yaml'} --resume {run_id}`") in result.output
    else:  # resumed in this process: the spec file is read (and here, missing)
        assert "nodes" not in result.output and "spec.yaml" in result.output


def test_what_names_no_pipeline_run_is_refused_saying_so(tmp_path: Path) -> None:
    store = home_store()
    try:
        experiment = store.get_or_create_experiment("script").experiment_id
        scripted = store.create_run(experiment, {}, {}, "file:///a").run_id
    finally:
        store.close()

    unknown = CliRunner().invoke(app, ["resume", "feedbeef"])
    of_a_script = CliRunner().invoke(app, ["resume", scripted])

    assert unknown.exit_code == 1
    assert "pipeline run 'feedbeef' not found; run 'feedbeef' not found" in unknown.output
    assert of_a_script.exit_code == 2
    assert f"run {scripted} records no pipeline run to resume" in of_a_script.output
