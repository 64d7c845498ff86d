"""The standard chain as a pipeline run of the runner: every step's state persisted, and the
spec's own `steps:` placed in the chain with `after:`, their errors naming the spec, the step
and the field."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from home import home_artifacts, home_store
from sklearn.metrics import roc_auc_score

from trainforge.config import Settings
from trainforge.entities import PipelineRunStatus, RunStatus, StepState
from trainforge.errors import RunFailed, SpecError
from trainforge.evaluate import predict_scores
from trainforge.orchestration import value_store
from trainforge.orchestration.cache import stored_refs
from trainforge.pipeline import plan_pipeline, run_pipeline
from trainforge.session import Session
from trainforge.train import Callback

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))

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
    assert [(p.step, p.value) for p in store.get_metric_history(
        run.run_id, "rows_checked").items] == [(0, float(rows))]  # kept through training
    assert run.metrics["auc_rows"] == pytest.approx(run.metrics["test_roc_auc"] * rows * 2.0)
    assert result.model_version is not None
    _check_stored_values(run, by_step)


def _check_stored_values(run, by_step) -> None:
    """Every step's outputs are in the value store, and what comes back is what the run
    recorded: the rows read, the splits (the golden set), the report, the model's scores."""
    values = value_store(Session.open())
    got = {}
    for attempt in by_step.values():
        refs = stored_refs(attempt.outputs)
        assert refs is not None, (attempt.step, attempt.outputs)
        got.update({name: values.get(ref, name) for name, ref in refs.items()})
    assert len(got["read"].frame) == 24_000 and got["read"].fingerprint == run.data_version_id
    assert got["raw"].locate(0).startswith(got["raw"].files[0].name)
    splits, dataset = got["splits"], got["dataset"]
    golden = pd.read_parquet(io.BytesIO(home_artifacts().get_bytes(
        run.run_id, "evaluation/test.parquet")))
    pd.testing.assert_frame_equal(splits.test.reset_index(drop=True), golden)
    assert len(dataset.test[0]) == len(golden) == len(dataset.test[1])
    report = json.loads(home_artifacts().get_bytes(run.run_id, "evaluation/report.json"))
    assert got["evaluation"].to_dict() == report
    trained = got["trained"]
    assert trained.summary["train_steps"] == run.metrics["train_steps"]
    scores = predict_scores(trained.model, dataset.test[0], "binary")
    assert roc_auc_score(dataset.test[1], scores) == pytest.approx(run.metrics["test_roc_auc"],
                                                                   abs=1e-6)
    assert got["gate"].passed and got["model_version"] == home_store().get_model_version(
        got["model_version"].model_name, got["model_version"].version)
    assert got["feature_pipeline"].content_hash == run.tags["features"]["hash"]


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


def test_a_step_declared_in_python_joins_the_chain(fraud_project):
    from chain_user_steps import count_positives

    result = run_pipeline(fraud_project / "pipeline.yaml", ONE_EPOCH, steps=[count_positives])
    store = home_store()
    run = store.get_run(result.run.run_id)
    by_step = {a.step: a for a in store.list_step_runs(run.system["pipeline_run"])}
    assert by_step["count_positives"].state is StepState.SUCCEEDED
    assert by_step["count_positives"].started_at >= by_step["validate"].ended_at
    data = pd.read_parquet(fraud_project / "data")
    assert run.tags["positives"] == int(data["is_fraud"].sum()) > 0
    assert [(p.step, p.value) for p in store.get_metric_history(
        run.run_id, "positives").items] == [(0, float(run.tags["positives"]))]
    with pytest.raises(SpecError, match=r"pipeline.yaml: step 'count_positives': after: "
                                        r"\['nowhere'\] are not steps"):
        run_pipeline(fraud_project / "pipeline.yaml", ONE_EPOCH,
                     steps=[count_positives.using(after=["nowhere"])])


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


class CrashAt(Callback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, trainer) -> None:
        if trainer.state.global_step == self.step:
            raise RuntimeError("crash")


STREAMED = ["data.streaming=true", "data.shuffle_rows=4096", "evaluation.gates=[]"]


@pytest.mark.slow
@pytest.mark.parametrize("streamed", [False, True], ids=["in-memory", "streamed-from-s3"])
def test_resume_of_a_failed_training_pipeline_run_trains_on_from_its_newest_checkpoint(
    request, streamed
):
    """A streamed run's data steps are stored as their plan (files, row groups, each row's
    part, fitted features), so its resume reuses them as an in-memory run's. Streamed here
    from S3 reached only through the spec's storage options: the plan keeps their names, not
    their values, and the resume reopens the source with the options its spec gives."""
    project = request.getfixturevalue("fraud_project_on_s3" if streamed else "fraud_project")
    settings = ["training.epochs=2", "training.checkpoint.every_n_steps=10",
                "training.deterministic=true", *(STREAMED if streamed else [])]
    spec = str(project / "pipeline.yaml")
    with pytest.raises(RunFailed, match="train: RuntimeError: crash") as failed:
        run_pipeline(spec, settings, callbacks=[CrashAt(25)])
    store = home_store()
    run_id = failed.value.run_id
    pipeline_run = store.get_run(run_id).system["pipeline_run"]
    states = {a.step: a.state for a in store.list_step_runs(pipeline_run)}
    assert states["train"] is StepState.FAILED and states["register"] is StepState.SKIPPED

    resumed = subprocess.run([TRAINFORGE, "resume", pipeline_run[:8]],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from the checkpoint of step 20" in resumed.stderr
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    [version] = store.list_model_versions().items
    assert (version.run_id, version.version) == (run_id, "1")
    assert store.get_pipeline_run(pipeline_run).status is PipelineRunStatus.SUCCEEDED
    last = {a.step: a for a in store.list_step_runs(pipeline_run)}
    assert last["train"].attempt == 2 and last["train"].state is StepState.SUCCEEDED
    assert all(last[step].attempt == 1 for step in CHAIN[:CHAIN.index("train")])  # reused
    assert all(a.state is StepState.SUCCEEDED for a in last.values())
    steps = [p.step for p in store.get_metric_history(run_id, "train_loss").items]
    assert steps == sorted(set(steps)) and len(steps) == 66  # 33 steps an epoch, each once

    again = subprocess.run([TRAINFORGE, "resume", pipeline_run], capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 2 and "succeeded; there is nothing to resume" in again.stderr
    if streamed:
        options = yaml.safe_load(Path(spec).read_text())["data"]["storage_options"]
        stored = [path.read_bytes() for path in
                  (Path(Settings.from_env().artifact_root) / "values").rglob("*.*")]
        assert any(b"client_kwargs" in value for value in stored)  # the plan names the options
        endpoint = options["client_kwargs"]["endpoint_url"].encode()
        assert not any(endpoint in value for value in stored)


AUDIT = {"name": "audit", "uses": "audit_step:audit", "inputs": ["evaluation"],
         "outputs": ["audited"], "after": ["evaluate"]}
PUBLISH = {"name": "publish", "uses": "audit_step:publish", "inputs": ["audited"],
           "outputs": ["published"]}
FAILING_AUDIT = '''
def audit(evaluation):
    raise ValueError("the audit is not ready")


def publish(audited, context):
    context.recorder.set_summary({"audited_auc": audited})
    return audited
'''


@pytest.mark.slow
def test_resume_runs_exactly_the_failed_step_and_what_depends_on_it(fraud_project):
    """The chain's steps all succeed, a step of the spec after evaluate fails; with its code
    fixed, `resume` runs it and the step after it, reusing every other step's stored outputs:
    nothing is read, trained or registered again."""
    path = _with_steps(fraud_project, [AUDIT, PUBLISH])
    module = fraud_project / "audit_step.py"
    module.write_text(FAILING_AUDIT)
    with pytest.raises(RunFailed, match="the audit is not ready") as failed:
        run_pipeline(path, ONE_EPOCH)
    store = home_store()
    run_id = failed.value.run_id
    pipeline_run = store.get_run(run_id).system["pipeline_run"]
    first = {a.step: a.state for a in store.list_step_runs(pipeline_run)}
    assert first == {**dict.fromkeys(CHAIN, StepState.SUCCEEDED), "audit": StepState.FAILED,
                     "publish": StepState.SKIPPED}

    module.write_text(FAILING_AUDIT.replace('raise ValueError("the audit is not ready")',
                                            'return evaluation.metrics["roc_auc"]'))
    resumed = subprocess.run([TRAINFORGE, "resume", pipeline_run], capture_output=True,
                             text=True, timeout=300, cwd=fraud_project)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    attempts = store.list_step_runs(pipeline_run)
    again = sorted(a.step for a in attempts if a.attempt > 1)
    assert again == ["audit", "publish"]
    assert all(a.state is StepState.SUCCEEDED for a in attempts if a.attempt > 1)
    assert sorted(a.step for a in attempts if a.attempt == 1) == sorted(
        [*CHAIN, "audit", "publish"])
    run = store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.metrics["audited_auc"] == pytest.approx(run.metrics["test_roc_auc"])
    assert len(store.list_model_versions().items) == 1
    assert "checkpoint" not in resumed.stderr
    assert store.get_pipeline_run(pipeline_run).status is PipelineRunStatus.SUCCEEDED
