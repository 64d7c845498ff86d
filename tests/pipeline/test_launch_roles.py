"""The roles of a multi-node job's launchers, against the real store: one launcher leads the
job's one pipeline run; a follower whose leader ended the run before the follower's workers
finished stops them and leaves the run as the leader ended it. (Two launchers with torchrun
workers: tests/cli/test_cli_distributed.py; a node joining a step and the outputs coming back
to the executing node: tests/orchestration/test_executors.py.)"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from home import home_store

from trainforge.entities import Pipeline, RunStatus
from trainforge.errors import Conflict, RunFailed, TrainingError
from trainforge.pipeline import Launch, plan_pipeline
from trainforge.pipeline import _distributed as distributed
from trainforge.pipeline._distributed import _follow, job_pipeline_run_id
from trainforge.pipeline._run import tracked_run
from trainforge.session import Session
from trainforge.tracking import start_run

LAUNCH = Launch(1, nnodes=2, rdzv_endpoint="node0:29500", rdzv_id="job-1")


def later(action, after_s: float = 0.3) -> threading.Thread:
    def act() -> None:
        time.sleep(after_s)
        action()

    thread = threading.Thread(target=act)
    thread.start()
    return thread


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_job_pipeline_run_is_created_once_so_one_launcher_leads():
    session = Session.open()
    session.store.upsert_pipeline(Pipeline(pipeline_id="fraud", name="fraud", dag_config={}))
    with start_run("fraud", store=session.store, artifacts=session.artifacts) as leader:
        pipeline_run = job_pipeline_run_id(LAUNCH, leader.run_id)
        session.store.create_pipeline_run(pipeline_run, "fraud", {}, {}, leader.run_id)
        assert pipeline_run != job_pipeline_run_id(
            Launch(1, nnodes=2, rdzv_endpoint="node0:29500", rdzv_id="job-2"), leader.run_id)
        with pytest.raises(Conflict, match="exists already"):
            session.store.create_pipeline_run(pipeline_run, "fraud", {}, {}, leader.run_id)


def test_a_follower_leaves_the_run_as_the_leader_ended_it(fraud_project, monkeypatch):
    """The follower's worker waits at the rendezvous for the leader's, which never come: the
    leader ended the run failed (its data steps failed)."""
    monkeypatch.setattr(distributed, "LEADER_GRACE_S", 0.0)
    plan = plan_pipeline(fraud_project / "pipeline.yaml", ["training.strategy=ddp"])
    launch = Launch(1, nnodes=2, rdzv_endpoint=f"127.0.0.1:{free_port()}", rdzv_id="job-1")
    store, run_id = home_store(), "a" * 32
    error = "pipeline run x failed: withdrawn: the data owner withdrew this extract"
    with tracked_run(plan, Session.open(), run_id=run_id) as leader:
        with pytest.raises(RunFailed) as raised:
            with tracked_run(plan, Session.open(), run_id=run_id) as follower:
                ending = later(lambda: store.end_run(run_id, RunStatus.FAILED, error=error))
                _follow(follower, follower.dag, launch, "p" * 32)
        ending.join()
        leader.leave()
    assert isinstance(raised.value.__cause__, TrainingError)
    assert str(raised.value.__cause__) == (
        f"the job's leading launcher ended the run failed before this node's workers "
        f"finished (pipeline run {'p' * 32}): {error}")
    assert follower.left
    run = store.get_run(run_id)
    assert (run.status, run.error) == (RunStatus.FAILED, error)  # as the leader ended it
