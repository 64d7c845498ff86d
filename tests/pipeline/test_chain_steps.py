"""The standard chain as a pipeline run of the runner: every step's state persisted, and the
spec's own `steps:` placed in the chain with `after:`, their errors naming the spec, the step
and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from home import home_store

from trainforge.entities import RunStatus, StepState
from trainforge.errors import RunFailed, SpecError
from trainforge.pipeline import plan_pipeline, run_pipeline

ONE_EPOCH = ["training.epochs=1"]
CHAIN = ["ingest", "validate", "profile", "split", "features", "train", "evaluate", "gate",
         "register"]


def _with_steps(project: Path, steps: list[dict]) -> Path:
    path = project / "pipeline.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["steps"] = steps
    path.write_text(yaml.safe_dump(spec))
    return path


COUNT = {"name": "count", "uses": "chain_user_steps:count_rows", "inputs": ["raw"],
         "outputs": ["row_count"], "after": ["validate"]}
SUMMARY = {"name": "summary", "uses": "chain_user_steps:summarise",
           "inputs": ["evaluation", "row_count"], "outputs": ["figure"],
           "params": {"scale": 2.0}, "after": ["gate"]}


def test_the_chain_and_user_steps_are_one_pipeline_run_with_every_state(fraud_project):
    path = _with_steps(fraud_project, [COUNT, SUMMARY])
    result = run_pipeline(path, ONE_EPOCH)
    store = home_store()
    run = store.get_run(result.run.run_id)
    assert run.status is RunStatus.COMPLETED
    pipeline_run = store.get_pipeline_run(run.system["pipeline_run"])
    assert pipeline_run.run_id == run.run_id and pipeline_run.pipeline_id == "fraud"
    assert pipeline_run.source == {"spec": {"path": str(path), "overrides": ONE_EPOCH}}
    attempts = store.list_step_runs(pipeline_run.pipeline_run_id)
    assert sorted(a.step for a in attempts) == sorted([*CHAIN, "count", "summary"])
    assert all(a.state is StepState.SUCCEEDED and a.attempt == 1 for a in attempts)
    by_step = {a.step: a for a in attempts}
    for step, before in (("count", "validate"), ("summary", "gate"), ("train", "features")):
        assert by_step[step].started_at >= by_step[before].ended_at, (step, before)
    rows = run.tags["rows_checked"]
    assert rows == 24_000 - run.tags["validation"]["quarantined"]
    assert run.metrics["auc_rows"] == pytest.approx(run.metrics["test_roc_auc"] * rows * 2.0)
    assert result.model_version is not None


def test_a_failing_user_step_skips_what_depends_on_it_and_fails_the_run(fraud_project):
    refuse = {"name": "refuse", "uses": "chain_user_steps:refuse", "inputs": ["raw"],
              "outputs": ["row_count"]}
    path = _with_steps(fraud_project, [refuse, SUMMARY])
    with pytest.raises(RunFailed, match="refused 24000 rows") as failed:
        run_pipeline(path, ONE_EPOCH)
    store = home_store()
    run = store.get_run(failed.value.run_id)
    assert run.status is RunStatus.FAILED
    states = {a.step: a for a in store.list_step_runs(run.system["pipeline_run"])}
    assert states["refuse"].state is StepState.FAILED
    assert "refused 24000 rows" in (states["refuse"].error or "")
    assert states["summary"].state is StepState.SKIPPED
    assert states["summary"].error == "not run: refuse did not succeed"
    assert all(states[step].state is StepState.SUCCEEDED for step in CHAIN)


@pytest.mark.parametrize(("steps", "expected"), [
    ([{**COUNT, "inputs": ["rows"]}],
     r"pipeline.yaml: step 'count' \(chain_user_steps:count_rows\): inputs: 'rows' is not an "
     "argument"),
    ([{**COUNT, "inputs": {"raw": "rows"}}],
     r"pipeline.yaml: step 'count': inputs: 'rows' is produced by no step"),
    ([{**COUNT, "uses": "chain_user_steps:nowhere"}],
     r"pipeline.yaml: steps\[0\] \(count\).uses: .*nowhere"),
    ([{**COUNT, "uses": "no_such_module_here:count_rows"}],
     r"pipeline.yaml: steps\[0\] \(count\).uses: .*no_such_module_here"),
    ([{**COUNT, "name": "train"}], r"pipeline.yaml: steps: .*duplicate step names \['train'\]"),
    ([{**COUNT, "outputs": ["dataset"]}],
     r"pipeline.yaml: step 'count': outputs: 'dataset' is produced by step 'features' too"),
    ([{**COUNT, "after": ["nowhere"]}],
     r"pipeline.yaml: step 'count': after: \['nowhere'\] are not steps"),
    ([{**COUNT, "inputs": {"raw": "figure"}}, SUMMARY],
     r"pipeline.yaml: dag .fraud.: steps count, summary wait on each other"),
    ([{**COUNT, "colour": "red"}], r"pipeline.yaml: steps\[0\]: unknown fields \['colour'\]"),
])
def test_bad_user_steps_are_refused_before_any_run(fraud_project, steps, expected):
    path = _with_steps(fraud_project, steps)
    with pytest.raises(SpecError, match=expected):
        plan_pipeline(path, ONE_EPOCH)
