"""The roles of a multi-node job's launchers, against the real store: the follower waits for
the dataset the leader's features step stored and leaves a run the leader ended alone; the
leader waits for the model global rank 0 named, on whichever node it ran. (Two launchers with
torchrun workers: tests/cli/test_cli_distributed.py.)"""

from __future__ import annotations

import json
import threading
import time

import pytest

from trainforge.entities import Pipeline, RunStatus, StepState
from trainforge.errors import Conflict, TrainingError
from trainforge.orchestration import value_store
from trainforge.orchestration.values import ValueRef
from trainforge.pipeline import Launch
from trainforge.pipeline._distributed import (
    _follow,
    _Job,
    _stored_dataset,
    _trained_by_rank0,
    job_pipeline_run_id,
)
from trainforge.session import Session
from trainforge.tracking import RunHandle, start_run

LAUNCH = Launch(1, nnodes=2, rdzv_endpoint="node0:29500", rdzv_id="job-1")


@pytest.fixture
def job():
    """A run the leader started, and the job's pipeline run it created."""
    session = Session.open()
    session.store.upsert_pipeline(Pipeline(pipeline_id="fraud", name="fraud", dag_config={}))
    with start_run("fraud", store=session.store, artifacts=session.artifacts) as leader:
        pipeline_run = job_pipeline_run_id(LAUNCH, leader.run_id)
        session.store.create_pipeline_run(pipeline_run, "fraud", {}, {}, leader.run_id)
        yield _Job(LAUNCH, [], session, leader.run_id, pipeline_run)


def later(action, after_s: float = 0.3) -> threading.Thread:
    def act() -> None:
        time.sleep(after_s)
        action()

    thread = threading.Thread(target=act)
    thread.start()
    return thread


def test_the_job_pipeline_run_is_created_once_so_one_launcher_leads(job):
    assert job.pipeline_run == job_pipeline_run_id(LAUNCH, job.run_id)
    assert job.pipeline_run != job_pipeline_run_id(
        Launch(1, nnodes=2, rdzv_endpoint="node0:29500", rdzv_id="job-2"), job.run_id)
    with pytest.raises(Conflict, match="exists already"):
        job.session.store.create_pipeline_run(job.pipeline_run, "fraud", {}, {}, job.run_id)


def test_the_dataset_is_there_once_the_features_step_stored_it(job):
    store = job.session.store
    row = store.add_step_run(job.pipeline_run, "features", 1, StepState.PENDING)
    assert _stored_dataset(store, job.pipeline_run, "features") is None
    ref = value_store(job.session).put({"rows": [1, 2, 3]}, "a dataset")
    store.update_step_run(row.step_run_id, StepState.SUCCEEDED,
                          outputs={"dataset": ref.to_json()})
    stored = _stored_dataset(store, job.pipeline_run, "features")
    assert stored is not None and ValueRef.from_json(json.loads(stored)) == ref
    kept = store.add_step_run(job.pipeline_run, "features", 2, StepState.PENDING)
    assert _stored_dataset(store, job.pipeline_run, "features") is None  # the last attempt's
    store.update_step_run(kept.step_run_id, StepState.SUCCEEDED,
                          outputs={"dataset": {"memory": "LiveDataset"}})
    with pytest.raises(TrainingError, match=r"^step 'features' kept its dataset in memory "
                       r"\(LiveDataset is not a value the value store takes\)"):
        _stored_dataset(store, job.pipeline_run, "features")


def test_a_follower_leaves_the_run_as_the_leader_ended_it_before_the_dataset(job):
    store = job.session.store
    store.add_step_run(job.pipeline_run, "features", 1, StepState.PENDING)
    follower = RunHandle.attach(store, job.run_id, job.session.artifacts)
    error = "pipeline run x failed: withdrawn: the data owner withdrew this extract"
    ending = later(lambda: store.end_run(job.run_id, RunStatus.FAILED, error=error))
    with pytest.raises(TrainingError) as raised:
        _follow(job, "features", follower)
    ending.join()
    assert str(raised.value) == (
        f"the job's leading launcher ended the run failed before its dataset was ready "
        f"(pipeline run {job.pipeline_run}): {error}")
    with pytest.raises(Conflict, match="has ended"):
        follower.log_metrics({"loss": 1.0}, step=1)  # closed: it ends nothing
    follower.__exit__(TrainingError, raised.value, None)  # as `run_tracked`'s `with` does
    run = store.get_run(job.run_id)
    assert (run.status, run.error) == (RunStatus.FAILED, error)


def test_the_leader_waits_for_the_model_rank0_named_for_its_pipeline_run(job):
    store, values = job.session.store, value_store(job.session)
    stale = values.put({"trained": "by an earlier attempt"}, "a model")
    store.set_system(job.run_id, {"launch": {"pipeline_run": "an earlier pipeline run",
                                             "trained": stale.to_json()}})
    trained = values.put({"trained": "by rank 0 on the other node"}, "a model")
    naming = later(lambda: store.set_system(job.run_id, {"launch": {
        "pipeline_run": job.pipeline_run, "trained": trained.to_json()}}))
    assert _trained_by_rank0(store, job.run_id, job.pipeline_run, wait_s=60) == trained
    naming.join()


def test_the_leader_stops_waiting_when_another_node_ended_the_run(job):
    store = job.session.store
    ending = later(lambda: store.end_run(job.run_id, RunStatus.FAILED,
                                         error="worker rank 1 failed (exit code 1): NaN"))
    with pytest.raises(TrainingError, match=r"^the run ended failed on another node: worker "
                                            r"rank 1 failed \(exit code 1\): NaN$"):
        _trained_by_rank0(store, job.run_id, job.pipeline_run, wait_s=60)
    ending.join()


def test_the_leader_gives_up_when_rank0_names_no_model_in_time(job):
    with pytest.raises(TrainingError, match="global rank 0 named no trained model in 0 s; its "
                                            "checkpoints are kept: continue the run with "
                                            "--resume"):
        _trained_by_rank0(job.session.store, job.run_id, job.pipeline_run, wait_s=0)
