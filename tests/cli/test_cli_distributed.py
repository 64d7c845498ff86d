"""`trainforge run SPEC --nproc-per-node 2`: one tracked run over two torchrun workers (gloo, CPU);
with `--nnodes 2`, the launchers of the two nodes (two processes here) share one run.

What the runs became is read back from the store directly (the listing commands have their own
tests), to spend the time on the launches.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from home import home_store
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.config import Settings
from trainforge.entities import RunStatus, StepState
from trainforge.errors import Conflict, SpecError
from trainforge.evaluate import EvalReport
from trainforge.pipeline import (
    Launch,
    launch_pipeline,
    parse_nodes,
    plan_pipeline,
)
from trainforge.pipeline._distributed import job_pipeline_run_id, job_run_id
from trainforge.pipeline._run import tracked_run
from trainforge.registry import GateResult
from trainforge.session import Session
from trainforge.train.checkpoint import CheckpointManager

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)


HIDE_DATA = """
import shutil


def hide(raw, folder: str = "") -> None:
    shutil.move(folder, folder + "-hidden")
"""


@pytest.mark.slow
def test_two_workers_make_one_completed_run_and_one_model_version(fraud_project):
    """Only the train step runs on the workers: a step of the spec moves the data files away
    once the launcher has read them, and the workers train all the same."""
    data = fraud_project / "data"
    (fraud_project / "hide_data.py").write_text(HIDE_DATA)
    spec = fraud_project / "pipeline.yaml"
    spec.write_text(spec.read_text() + "\nsteps:\n  - {name: hide, uses: 'hide_data:hide', "
                    f"inputs: [raw], params: {{folder: '{data}'}}, after: [validate]}}\n")
    result = cli("run", str(spec), "--nproc-per-node", "2",
                 "training.strategy=ddp", "training.epochs=2", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["status"] == "completed" and summary["model_version"] == "fraud_detector/1"
    assert not data.exists() and data.with_name("data-hidden").is_dir()

    store = home_store()
    [run] = store.list_runs().items
    assert run.run_id == summary["run_id"] and run.status is RunStatus.COMPLETED
    attempts = store.list_step_runs(run.system["pipeline_run"])
    assert sorted(a.step for a in attempts) == sorted(
        ["ingest", "validate", "hide", "profile", "split", "features", "train", "evaluate",
         "gate", "register"])
    assert {a.state for a in attempts} == {StepState.SUCCEEDED}
    assert run.tags["distributed"]["nproc_per_node"] == 2
    assert run.system["distributed"] == run.tags["distributed"]
    assert (run.tags["trainer"]["world_size"], run.tags["trainer"]["strategy"]) == (2, "ddp")
    assert run.metrics["test_roc_auc"] > 0.7
    assert store.get_metric_history(run.run_id, "train_loss").items
    [version] = store.list_model_versions().items
    assert (version.model_name, version.version, version.run_id) == (
        "fraud_detector", "1", run.run_id)


@pytest.mark.slow
def test_a_streamed_run_trains_on_workers_that_read_their_own_shards(fraud_project_on_s3):
    """A streaming dataset is stored as its plan: each worker reads it back and then only its
    own shards; the launcher's pipeline run records each step once. The source is on S3,
    reached only through the spec's storage options, which the stored plan does not keep:
    each worker reopens the source with the options of its spec."""
    result = cli("run", str(fraud_project_on_s3 / "pipeline.yaml"), "--nproc-per-node", "2",
                 "training.strategy=ddp", "training.epochs=1", "data.streaming=true",
                 "data.shuffle_rows=4096", "evaluation.gates=[]", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["model_version"] == "fraud_detector/1"
    store = home_store()
    [run] = store.list_runs().items
    assert run.status is RunStatus.COMPLETED and run.tags["data"]["streaming"] is True
    assert run.tags["trainer"]["world_size"] == 2 and run.metrics["test_roc_auc"] > 0.5
    attempts = store.list_step_runs(run.system["pipeline_run"])
    assert sorted(a.step for a in attempts) == sorted(
        ["ingest", "validate", "profile", "split", "features", "train", "evaluate", "gate",
         "register"])
    assert {a.state for a in attempts} == {StepState.SUCCEEDED}


@pytest.mark.slow
def test_a_failing_worker_fails_the_run_with_its_error(fraud_project):
    result = cli("run", str(fraud_project / "pipeline.yaml"), "--nproc-per-node", "2",
                 "training.strategy=ddp", "training.optimizer.lr=1e30")
    assert result.returncode == 1
    assert "failed" in result.stderr and "worker rank" in result.stderr
    store = home_store()
    [run] = store.list_runs().items
    assert run.status is RunStatus.FAILED
    assert "worker rank" in run.error and "training loss became nan" in run.error
    states = {a.step: a.state for a in store.list_step_runs(run.system["pipeline_run"])}
    assert states["features"] is StepState.SUCCEEDED and states["train"] is StepState.FAILED
    assert states["evaluate"] is StepState.SKIPPED


def test_several_processes_need_a_distributed_strategy(fraud_project):
    with pytest.raises(SpecError, match="training.strategy: 'single' cannot use 2 processes"):
        launch_pipeline(fraud_project / "pipeline.yaml", [], Launch(nproc_per_node=2))
    assert home_store().list_runs().items == ()


NODE = ["--nproc-per-node", "1", "--nnodes", "2", "training.strategy=ddp"]


@pytest.mark.parametrize("flags,message", [
    (["--nnodes", "2"], "need --nproc-per-node"),
    (["--rdzv-id", "job-1"], "need --nproc-per-node"),
    ([*NODE, "--rdzv-id", "job-1"], "--nnodes > 1 needs --rdzv-endpoint"),
    ([*NODE, "--rdzv-endpoint", "127.0.0.1:29500"], "--nnodes > 1 needs --rdzv-id"),
    ([*NODE, "--rdzv-endpoint", "127.0.0.1:29500", "--rdzv-id", "job-1", "--resume", "0" * 32],
     "there is no such run to resume"),
    (["--nproc-per-node", "1", "--nnodes", "2:1"], "--nnodes: expected N or MIN:MAX with "
                                                  "1 <= MIN <= MAX, got '2:1'"),
    (["--nproc-per-node", "1", "--nnodes", "two"], "got 'two'"),
    (["--nproc-per-node", "1", "--nnodes", "1:2", "--rdzv-endpoint", "127.0.0.1:29500",
      "--rdzv-id", "job-1", "training.strategy=ddp"], "--nnodes 1:2 needs --max-restarts >= 1"),
])
def test_launch_flags_are_checked_before_any_run(fraud_project, flags, message):
    result = CliRunner().invoke(app, ["run", str(fraud_project / "pipeline.yaml"), *flags])
    assert result.exit_code == 2 and message in result.output
    assert home_store().list_runs().items == ()


def test_the_nodes_of_a_job_derive_its_run_id_from_what_they_share():
    node = Launch(1, nnodes=2, rdzv_endpoint="node0:29500", rdzv_id="job-1")
    same_job = Launch(4, nnodes=2, rdzv_endpoint="node0:29500", rdzv_id="job-1")
    next_job = Launch(1, nnodes=2, rdzv_endpoint="node0:29500", rdzv_id="job-2")
    run_id = job_run_id("fraud", node)
    assert len(run_id) == 32 and run_id == job_run_id("fraud", same_job)
    assert run_id not in (job_run_id("fraud", next_job), job_run_id("digits", node))
    assert node.torchrun_args(["spec.yaml"])[-5:-3] == ["--rdzv-id", "job-1"]


def test_an_elastic_launch_hands_torchrun_its_node_range():
    elastic = Launch(2, nnodes=4, rdzv_endpoint="node0:29500", max_restarts=3, rdzv_id="job-1",
                     min_nodes=2)
    args = elastic.torchrun_args(["spec.yaml"])
    assert args[:6] == ["--nnodes", "2:4", "--nproc-per-node", "2", "--max-restarts", "3"]
    assert elastic.world_size == 8  # at most
    assert parse_nodes("2:4") == (2, 4) and parse_nodes("3") == (3, 3)
    assert Launch(2, nnodes=3, min_nodes=3).nodes == "3"


RANK0_VALUES = {"evaluation": EvalReport("test", {"roc_auc": 0.9}, 100),
                "gate": GateResult(passed=True, failures=()), "model_version": None}


def launcher(plan, body, **options):
    """A launcher's part in a job: `body(tracked)` returns the DAG's values (this launcher
    reports the run) or None (it leaves the run to the one that does)."""
    with tracked_run(plan, Session.open(), **options) as tracked:
        values = body(tracked)
        if values is None:
            tracked.leave()
            return None
    return tracked.result(values)


@pytest.mark.parametrize("creator_reports", [True, False], ids=["creator", "joiner"])
def test_the_launchers_of_a_job_share_one_run_that_the_reporting_launcher_ends(
    fraud_project, creator_reports
):
    """Two launchers in one process: the second starts while the first's workers run."""
    plan, run_id = plan_pipeline(fraud_project / "pipeline.yaml"), "a" * 32
    joiner, status_after_joiner = [], []

    def creator(tracked):
        joiner.append(launcher(plan, join, run_id=run_id))
        status_after_joiner.append(home_store().get_run(run_id).status)
        return RANK0_VALUES if creator_reports else None

    def join(tracked):
        return None if creator_reports else RANK0_VALUES

    results = [launcher(plan, creator, run_id=run_id), *joiner]
    reporter, other = results if creator_reports else results[::-1]
    assert other is None and reporter.run.run_id == run_id
    assert status_after_joiner == [
        RunStatus.RUNNING if creator_reports else RunStatus.COMPLETED]
    [run] = home_store().list_runs().items
    assert run.run_id == run_id and run.status is RunStatus.COMPLETED
    with pytest.raises(Conflict, match=r"has ended \(completed\); a new multi-node job needs"):
        launcher(plan, join, run_id=run_id)


@pytest.mark.parametrize("how", ["--resume", "auto"])
def test_the_launchers_of_a_job_resume_one_run_the_first_reopens_and_the_others_join(
    fraud_project, how
):
    """Two launchers in one process resume a stopped run: the second starts while the first's
    workers run, and joins the run instead of refusing it as live."""
    plan = plan_pipeline(fraud_project / "pipeline.yaml",
                         ["training.checkpoint.resume=auto"] if how == "auto" else [])
    store = home_store()
    stopped = launcher(plan, lambda tracked: RANK0_VALUES)
    run_id = stopped.run.run_id
    store.end_run(run_id, RunStatus.FAILED, error="node lost")
    location = store.get_run(run_id).system["checkpoint"]["location"]
    with CheckpointManager(location, run_id=run_id) as checkpoints:  # what `auto` looks for
        checkpoints.save(10, {"step": 10}, blocking=True)
    job = "127.0.0.1:29500/job-2"
    joined: list = []
    options = {"job": job, "resume": run_id if how == "--resume" else None, "run_id": "b" * 32}

    def first(tracked):
        assert store.get_run(tracked.handle.run_id).system["job"] == job
        joined.append(launcher(plan, lambda tracked: None, **options))  # not the reporter
        return RANK0_VALUES

    reporter = launcher(plan, first, **options)
    assert reporter.run.run_id == run_id and joined == [None]
    [run] = store.list_runs().items
    assert run.status is RunStatus.COMPLETED and run.error is None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


COUNT_RUNS = """
from pathlib import Path


def count(raw, tally: str = "") -> None:
    with open(tally, "a") as lines:
        lines.write("ran\\n")
"""


def node_command(spec: Path, endpoint: str, *flags: str) -> list[str]:
    return [TRAINFORGE, "run", str(spec), "--nnodes", "2", "--nproc-per-node", "1",
            "--rdzv-endpoint", endpoint, "--rdzv-id", "job-1", "training.strategy=ddp", *flags]


@pytest.mark.slow
def test_two_nodes_run_the_data_steps_once_and_the_leader_reports_rank0s_model(fraud_project):
    """The job's steps other than training run once, on the leading launcher, even though
    global rank 0 trains on the other node: the follower is started once the leader's spec
    step has run, from a shell started first, so its launcher has the lower pid, which
    torch's rendezvous ranks first on one host."""
    tally = fraud_project / "tally.txt"
    (fraud_project / "count_runs.py").write_text(COUNT_RUNS)
    spec = fraud_project / "pipeline.yaml"
    spec.write_text(spec.read_text() + "\nsteps:\n  - {name: count, uses: 'count_runs:count', "
                    f"inputs: [raw], params: {{tally: '{tally}'}}, after: [validate]}}\n")
    endpoint = f"127.0.0.1:{free_port()}"
    command = node_command(spec, endpoint, "training.epochs=2", "--json")
    store = home_store()  # created and migrated before the two launchers share it
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    follower = subprocess.Popen(
        ["sh", "-c", f'until [ -s "{tally}" ]; do sleep 0.05; done; exec "$@"', "sh", *command],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    leader = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    assert follower.pid < leader.pid
    (led, led_err), (followed, followed_err) = [node.communicate(timeout=300)
                                                for node in (leader, follower)]
    assert leader.returncode == 0, led_err[-3000:]
    assert follower.returncode == 0 and followed == "", followed_err[-3000:]

    summary = json.loads(led)
    [run] = store.list_runs().items
    launch = Launch(1, nnodes=2, rdzv_endpoint=endpoint, rdzv_id="job-1")
    assert run.run_id == summary["run_id"] == job_run_id("fraud", launch)
    assert run.status is RunStatus.COMPLETED and summary["model_version"] == "fraud_detector/1"
    assert (run.tags["trainer"]["world_size"], run.tags["distributed"]["nnodes"]) == (2, 2)
    assert run.metrics["test_roc_auc"] > 0.7
    assert store.get_metric_history(run.run_id, "train_loss").items
    assert tally.read_text() == "ran\n"  # the spec's step, once for the job
    pipeline_run = run.system["pipeline_run"]
    assert pipeline_run == job_pipeline_run_id(launch, run.run_id)
    attempts = store.list_step_runs(pipeline_run)
    assert sorted(a.step for a in attempts) == sorted(
        ["ingest", "validate", "count", "profile", "split", "features", "train", "evaluate",
         "gate", "register"])
    assert {a.state for a in attempts} == {StepState.SUCCEEDED}
    [train] = [attempt for attempt in attempts if attempt.step == "train"]
    assert "memory" not in train.outputs["trained"]  # rank 0's model, a value of the step
    stored = [attempt for attempt in attempts if attempt.outputs]
    assert len(store.list_step_outputs()) == len(stored)  # no other pipeline run stored any


EXIT_PREEMPTED = 75
RESUMABLE = ["training.strategy=ddp", "training.epochs=3", "training.deterministic=true",
             "training.checkpoint.every_n_steps=10"]  # 2 x 512 rows a step: 17 steps an epoch


def start_nodes(spec: str, endpoint: str, *flags: str) -> list[subprocess.Popen]:
    """The launchers of a two-node job (one worker each), as two processes on this machine."""
    command = [TRAINFORGE, "run", spec, *RESUMABLE, "--nnodes", "2", "--nproc-per-node", "1",
               "--rdzv-endpoint", endpoint, *flags]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for _ in range(2)]


@pytest.mark.slow
def test_two_launchers_resume_a_preempted_multi_node_run_from_its_checkpoint(fraud_project):
    spec = str(fraud_project / "pipeline.yaml")
    store = home_store()  # created and migrated before the launchers share it
    endpoint = f"127.0.0.1:{free_port()}"
    run_id = job_run_id("fraud", Launch(1, nnodes=2, rdzv_endpoint=endpoint, rdzv_id="job-1"))
    nodes = start_nodes(spec, endpoint, "--rdzv-id", "job-1")
    checkpoint = Path(Settings.from_env().artifact_root) / run_id / "checkpoints" / \
        "step-0000000020" / "MANIFEST.json"
    deadline = time.monotonic() + 240
    while not checkpoint.exists():
        assert all(node.poll() is None for node in nodes), [n.communicate() for n in nodes]
        assert time.monotonic() < deadline, "no checkpoint of step 20 within 240 s"
        time.sleep(0.05)
    for node in nodes:
        node.send_signal(signal.SIGTERM)
    stopped = [node.communicate(timeout=120) for node in nodes]
    assert [node.returncode for node in nodes] == [EXIT_PREEMPTED] * 2, stopped[0][1][-3000:]
    hint = stopped[0][1].split("continue it with: ", 1)[1].splitlines()[0]
    assert f"--nnodes 2 --rdzv-endpoint {endpoint} --rdzv-id job-1 --resume {run_id}" in hint
    run = store.get_run(run_id)
    assert run.status is RunStatus.PREEMPTED
    preempted_at = int(run.error.split("after step ")[1].split()[0])
    assert preempted_at >= 20

    resumed_at = time.time()
    nodes = start_nodes(spec, f"127.0.0.1:{free_port()}", "--rdzv-id", "job-2",
                        "--resume", run_id, "--json")
    outputs = [node.communicate(timeout=300) for node in nodes]
    for node, (_, err) in zip(nodes, outputs):
        assert node.returncode == 0, err[-3000:]
    [summary] = [json.loads(out) for out, _ in outputs if out.strip()]  # the leader reports
    run = store.get_run(run_id)
    assert summary["run_id"] == run_id and run.status is RunStatus.COMPLETED
    assert [r.run_id for r in store.list_runs().items] == [run_id]
    assert run.tags["trainer"]["world_size"] == 2 and run.system["job"].endswith("/job-2")
    points = store.get_metric_history(run_id, "train_loss").items
    assert [p.step for p in points] == list(range(1, 52))  # every step once
    # the steps up to the checkpoint are the first attempt's; training went on from there
    assert all((p.timestamp < resumed_at) == (p.step <= preempted_at) for p in points)
