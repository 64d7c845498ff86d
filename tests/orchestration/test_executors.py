"""Where a step runs is the executor's business, not the runner's: a step declaring
`resources: {processes: 2}` runs under torchrun and hands its outputs back as values; an
executor that runs every step in a child process gives the same pipeline run as the default
one; a bad declaration is refused naming the field."""

from __future__ import annotations

import multiprocessing
import os
import socket
import threading
import time
from pathlib import Path

import pytest
import runner_steps as rs

from trainforge.config import Settings
from trainforge.entities import Pipeline, StepState
from trainforge.errors import PipelineFailed, SpecError, TrainingError
from trainforge.orchestration import Dag, InProcessRunner, RunOptions, Step, ValueStore
from trainforge.orchestration.dag import Resources, StepOptions
from trainforge.orchestration.executors import (
    InlineExecutor,
    Launch,
    Produced,
    StepCall,
    TorchrunExecutor,
    executor_for,
)
from trainforge.orchestration.steps import StepDeclaration, make_step, step, steps_from_yaml
from trainforge.orchestration.values import ValueRef
from trainforge.session import Session
from trainforge.storage import Store
from trainforge.storage.artifacts import open_artifact_store
from trainforge.tracking import open_run


@pytest.fixture(autouse=True)
def pipeline(sqlite_store: Store) -> None:
    sqlite_store.upsert_pipeline(Pipeline("p", "p", {}))


def _step(fn, outputs=(), **options):
    wiring = {key: options.pop(key) for key in ("name", "inputs", "params") if key in options}
    return make_step(fn, StepDeclaration(outputs=tuple(outputs), **wiring,
                                         options=StepOptions(**options)))


def test_a_step_declaring_two_processes_runs_under_torchrun_and_returns_values(
        sqlite_store: Store, sqlite_url: str, values: ValueStore, tmp_path: Path) -> None:
    settings = Settings.from_env({"TRAINFORGE_HOME": str(tmp_path / "home"),
                                  "TRAINFORGE_DB": sqlite_url})
    dag = Dag("p", (_step(rs.numbers, ["frame"]),
                    _step(rs.gathered, ["gathered"], resources=Resources(processes=2)),
                    _step(rs.total, ["sum"])))
    session = Session(settings, sqlite_store, open_artifact_store(tmp_path / "runs"))
    with open_run("p", session) as run:
        outcome = InProcessRunner(sqlite_store, values, recorder=run,
                                  settings=settings).run(dag)
    gathered = outcome.value("gathered")
    assert gathered["world_size"] == 2
    assert [rank["rank"] for rank in gathered["ranks"]] == [0, 1]
    assert [rank["rows"] for rank in gathered["ranks"]] == [4, 4]
    pids = {rank["pid"] for rank in gathered["ranks"]}
    assert len(pids) == 2 and os.getpid() not in pids
    attempt = outcome.steps["gathered"]
    assert attempt.state is StepState.SUCCEEDED
    assert ValueRef.from_json(attempt.outputs["gathered"]).codec == "json"
    assert outcome.value("sum") == 6.0
    assert sqlite_store.get_run(run.run_id).tags == {"rank0": "recorded"}  # rank 0 records


def test_a_failing_rank_fails_the_step_with_its_error(
        sqlite_store: Store, values: ValueStore) -> None:
    dag = Dag("p", (_step(rs.numbers, ["frame"]),
                    _step(rs.fails_on_rank_1, ["n"], resources=Resources(processes=2))))
    with pytest.raises(PipelineFailed) as failed:
        InProcessRunner(sqlite_store, values).run(dag)
    [attempt] = [a for a in sqlite_store.list_step_runs(failed.value.pipeline_run_id)
                 if a.step == "fails_on_rank_1"]
    assert attempt.state is StepState.FAILED
    assert attempt.error == "data: rank 1 refuses the 4 rows (worker rank 1)"


def test_a_step_held_in_memory_cannot_go_to_torchrun(values: ValueStore) -> None:
    call = StepCall(_step(rs.total, ["sum"]), 1, "run", {"frame": None}, values)
    with pytest.raises(SpecError, match="resources.processes: 2 runs it under torchrun, and "
                       "its input 'frame' is held in memory"):
        TorchrunExecutor(Launch(2)).execute(call)


def test_resources_are_declared_in_python_and_yaml_and_checked() -> None:
    @step(outputs=["n"], processes=2)
    def count(frame: object) -> int:
        return 0

    assert count.to_step().options.resources.processes == 2
    [declared] = steps_from_yaml([{"uses": "runner_steps:total", "outputs": ["sum"],
                                   "resources": {"processes": 3}}], "p.yaml")
    assert declared.options.resources.processes == 3
    assert isinstance(executor_for(declared, None), TorchrunExecutor)
    assert isinstance(executor_for(_step(rs.total, ["sum"]), None), InlineExecutor)
    for resources, problem in (({"processes": 0}, "resources.processes: 0 (expected a whole "
                                                  "number >= 1)"),
                               ({"gpus": 1}, "resources: {'gpus': 1} (expected a mapping "
                                             "with processes)")):
        with pytest.raises(SpecError) as refused:
            steps_from_yaml([{"uses": "runner_steps:total", "resources": resources}], "p.yaml")
        assert refused.value.problems == [f"p.yaml: steps[0].{problem}"]


class ChildProcessExecutor:
    """A test double: every step in a child process of its own (spawned), whatever it
    declares; only references go there and back."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def execute(self, call: StepCall) -> Produced:
        self.ran.append(call.step.name)
        context = multiprocessing.get_context("spawn")
        with context.Pool(1) as pool:
            refs = pool.apply(_run_in_child, (call.step, dict(call.inputs), call.values))
        return Produced(refs)


def _run_in_child(step: Step, inputs: dict, values: ValueStore) -> dict:
    returned = step.fn(**step.arguments({name: values.get(ref) for name, ref in inputs.items()}))
    [output] = step.outputs
    return {output: values.put(returned)}


def test_the_runner_does_not_care_where_a_step_runs(
        sqlite_store: Store, values: ValueStore) -> None:
    dag = Dag("p", (_step(rs.numbers, ["frame"]), _step(rs.doubled, ["twice"]),
                    _step(rs.where, ["where"], inputs={"frame": "twice"})))
    options = RunOptions(use_cache=False)
    here = InProcessRunner(sqlite_store, values).run(dag, options=options)
    double = ChildProcessExecutor()
    there = InProcessRunner(sqlite_store, values, executors=lambda step, timeout: double
                            ).run(dag, options=options)
    assert double.ran == ["numbers", "doubled", "where"]
    assert there.value("twice").equals(here.value("twice"))
    assert there.value("where")["rows"] == here.value("where")["rows"] == 4
    assert here.value("where")["pid"] == os.getpid() != there.value("where")["pid"]
    assert {name: a.state for name, a in there.steps.items()} == {
        name: a.state for name, a in here.steps.items()}
    assert there.steps["doubled"].outputs == here.steps["doubled"].outputs
    cached = InProcessRunner(sqlite_store, values, executors=lambda step, timeout: double
                             ).run(dag)
    assert {a.state for a in cached.steps.values()} == {StepState.CACHED}
    assert double.ran == ["numbers", "doubled", "where"]  # a cache hit runs nowhere


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_node_joining_a_step_gets_its_inputs_from_the_executing_node(
        sqlite_store: Store, sqlite_url: str, values: ValueStore, tmp_path: Path) -> None:
    """Two nodes (two torchrun agents here) run one step: the joining node defines the step
    without inputs; its worker reads the frame the executing node names, and the outputs come
    back to the executing node's runner, recorded once, by global rank 0."""
    settings = Settings.from_env({"TRAINFORGE_HOME": str(tmp_path / "home"),
                                  "TRAINFORGE_DB": sqlite_url})
    session = Session(settings, sqlite_store, open_artifact_store(tmp_path / "runs"))
    launch = Launch(1, nnodes=2, rdzv_endpoint=f"127.0.0.1:{free_port()}", rdzv_id="job-1")
    gathered = _step(rs.gathered, ["gathered"])
    frame = values.put(rs.numbers())
    joined: list = []
    with open_run("p", session) as run:
        joining = StepCall(gathered, 1, "p-run", {}, values, run.run_id, settings)
        node = threading.Thread(target=lambda: joined.append(
            TorchrunExecutor(launch).join(joining, lambda: None)))
        node.start()
        executing = StepCall(gathered, 1, "p-run", {"frame": frame}, values, run.run_id,
                             settings)
        produced = TorchrunExecutor(launch).execute(executing)
        node.join(timeout=120)
    assert joined == [None]
    result = values.get(produced.refs["gathered"])
    assert result["world_size"] == 2
    assert [rank["rows"] for rank in result["ranks"]] == [4, 4]  # both read the one frame
    assert len({rank["pid"] for rank in result["ranks"]}) == 2
    assert sqlite_store.get_run(run.run_id).tags == {"rank0": "recorded"}


def test_a_joining_node_stops_waiting_when_told_why(values: ValueStore) -> None:
    """No node executes the step: the joining node's workers wait at the rendezvous until
    `abandoned` gives a reason, then they are stopped and the reason raised."""
    launch = Launch(1, nnodes=2, rdzv_endpoint=f"127.0.0.1:{free_port()}", rdzv_id="job-1")
    asked: list[float] = []

    def abandoned() -> str | None:
        asked.append(time.monotonic())
        return "the leader ended the run failed" if len(asked) >= 2 else None

    call = StepCall(_step(rs.gathered, ["gathered"]), 1, "p-run", {}, values)
    with pytest.raises(TrainingError, match="^the leader ended the run failed$"):
        TorchrunExecutor(launch).join(call, abandoned)
    assert len(asked) == 2


@pytest.mark.parametrize("timeout_s", [None, 60.0], ids=["thread", "own-process"])
def test_what_a_step_records_reaches_the_run_wherever_it_runs(
        sqlite_store: Store, sqlite_url: str, values: ValueStore, tmp_path: Path,
        timeout_s: float | None) -> None:
    settings = Settings.from_env({"TRAINFORGE_HOME": str(tmp_path / "home"),
                                  "TRAINFORGE_DB": sqlite_url})
    dag = Dag("p", (_step(rs.numbers, ["frame"]),
                    _step(rs.counted, ["rows"], timeout_s=timeout_s)))
    session = Session(settings, sqlite_store, open_artifact_store(tmp_path / "runs"))
    with open_run("p", session) as run:
        outcome = InProcessRunner(sqlite_store, values, recorder=run,
                                  settings=settings).run(dag)

    assert outcome.value("rows") == 4
    seen = sqlite_store.get_metric_history(run.run_id, "rows_seen").items
    assert [(p.step, p.value) for p in seen] == [(1, 4.0)]
    assert sqlite_store.get_run(run.run_id).metrics["rows_seen"] == 4.0
