"""A pipeline as one tracked run whose train step runs on torchrun workers.

    launcher (trainforge run SPEC --nproc-per-node N), one per node
      ├── creates the run, or joins it (one run id for the whole job), and records the launch
      ├── single node: runs the pipeline's DAG as one pipeline run, its train step put on
      │   `TorchrunExecutor(launch)` by the launch's executor choice: the dataset the
      │   features step stored goes to the workers as the step's input, the trained model
      │   comes back as its output, through the runner that owns the step's state
      └── `--nnodes` > 1: creates the job's pipeline run, or finds it created by another
          node's launcher (one pipeline run per job): the launcher that created it leads and
          runs the DAG as above; the others follow: each `join`s the train step with its
          node's workers, which receive the step's inputs from the leader's over the process
          group, and returns when they finish, leaving the run to the leader

On the workers (`orchestration/_torchrun_step.py`) the train step trains in the job's process
group with the spec's preemption signals installed; global rank 0 records to the run (metrics,
checkpoints, weights) and stores the trained model, the others record nothing. A `data.streaming`
dataset travels as its plan, from which each worker reads only its own shards, through the
spec's `data.storage_options`, which its node's session gives the plan's decoder.

With `--nnodes` > 1 every node runs a launcher with the same `--rdzv-endpoint` and `--rdzv-id`,
from which each derives the job's run id (`job_run_id`) and its pipeline run id
(`job_pipeline_run_id`): the first launcher creates the run, the others join it; the first to
create the pipeline run leads it. Given `--resume RUN_ID` (or `training.checkpoint.resume:
auto`), every launcher names the same run to continue: the first reopens it for the job
(`job_key`), the others join it, and the workers continue from its newest checkpoint. When the
leader's node is lost, the run stays unfinished: its checkpoints hold the training, and
`--resume` finishes it.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from trainforge.config import Credentials, PipelineSpec, Settings
from trainforge.entities import RunStatus
from trainforge.errors import Conflict, SpecError
from trainforge.orchestration import Dag, RunOptions, Step, value_store
from trainforge.orchestration.executors import (
    Executor,
    ExecutorChoice,
    Launch,
    StepCall,
    TorchrunExecutor,
    executor_for,
)
from trainforge.pipeline._dag import Recorded
from trainforge.pipeline._dataset import Dataset
from trainforge.pipeline._plan import plan_pipeline
from trainforge.pipeline._run import PipelineResult, TrackedRun, tracked_run
from trainforge.pipeline._steps import train
from trainforge.session import Session
from trainforge.tracking import LaunchShape, RunRecorder, SystemRecord
from trainforge.train import PreemptionNotice, process_group

DISTRIBUTED_RECORD = "distributed"  # a tag for people: the launch's shape (the system reads
# its own copy, `SystemRecord.distributed`)
TRAIN_STEP = "train"
LEADER_GRACE_S = 30.0  # how long a follower's workers may take to stop once the leader ended
JOB_NAMESPACE = uuid.UUID("dce1f42d-06d4-452f-9a4b-2221ec2166a1")  # of `job_run_id`
log = logging.getLogger("trainforge")


def launch_pipeline(
    path: str | Path, overrides: list[str] | None, launch: Launch, resume: str | None = None,
    *, allow_neutral_changes: bool = False, session: Session | None = None,
    reproduces: str | None = None,
) -> PipelineResult | None:
    """Run the pipeline of `path` as one tracked run over `launch.world_size` processes.

    Errors as `run_pipeline`: `SpecError` before any run exists (also for a launch the spec
    cannot use), `RunFailed` when a worker fails, naming the run and the worker's error.
    Workers restarted by torchrun (`max_restarts`), like a `resume`d run, continue from the
    run's newest checkpoint. With `launch.nnodes` > 1 each node calls this: the launcher that
    leads the job (the first to create its pipeline run) returns the result, the others None
    (the leader reports the run). `reproduces`: as `run_pipeline`'s.
    """
    overrides = list(overrides or [])
    plan = plan_pipeline(path, overrides)
    _check_launch(plan.spec, launch, str(path), resume)
    multi_node = launch.nnodes > 1
    with tracked_run(plan, session or Session.open(), resume=resume,
                     allow_neutral_changes=allow_neutral_changes, reproduces=reproduces,
                     run_id=job_run_id(plan.spec.name, launch) if multi_node else None,
                     job=job_key(launch) if multi_node else None) as tracked:
        _record_launch(tracked, launch)
        dag = _train_on_workers(tracked.dag, plan.spec)
        executors = _executors(launch)
        if not multi_node:
            values = tracked.execute(dag=dag, executors=executors)
        else:
            pipeline_run = job_pipeline_run_id(launch, tracked.handle.run_id)
            try:  # created here, so that exactly one launcher leads; its runner continues it
                tracked.session.store.create_pipeline_run(
                    pipeline_run, dag.name, plan.source_record(), RunOptions().to_json(),
                    tracked.handle.run_id)
            except Conflict:
                _follow(tracked, dag, launch, pipeline_run)
                return None
            values = tracked.execute(dag=dag, executors=executors, pipeline_run=pipeline_run)
    return tracked.result(values)


def parse_nodes(text: str) -> tuple[int, int]:
    """`--nnodes` N or MIN:MAX as (min, max); `SpecError` naming the flag otherwise."""
    low, _, high = text.partition(":")
    try:
        nodes = int(low), int(high or low)
    except ValueError:
        nodes = (0, 0)
    if not 1 <= nodes[0] <= nodes[1]:
        raise SpecError([f"--nnodes: expected N or MIN:MAX with 1 <= MIN <= MAX, got {text!r}"])
    return nodes


def job_key(launch: Launch) -> str:
    """What names a multi-node job on every node: its rendezvous endpoint and id."""
    return f"{launch.rdzv_endpoint}/{launch.rdzv_id}"


def job_run_id(pipeline: str, launch: Launch) -> str:
    """The run id of a new multi-node job: the same on every node, from what all nodes are
    given."""
    return uuid.uuid5(JOB_NAMESPACE, f"{pipeline}/{job_key(launch)}").hex


def _check_launch(spec: Any, launch: Launch, source: str, resume: str | None) -> None:
    problems = []
    if launch.nproc_per_node < 1 or launch.nnodes < 1 or launch.max_restarts < 0:
        problems.append("--nproc-per-node and --nnodes must be >= 1, --max-restarts >= 0")
    if launch.min_nodes is not None and not 1 <= launch.min_nodes <= launch.nnodes:
        problems.append(f"--nnodes {launch.nodes}: expected 1 <= MIN <= MAX")
    elif ":" in launch.nodes and launch.max_restarts < 1:
        problems.append(f"--nnodes {launch.nodes} needs --max-restarts >= 1: when a node is "
                        "lost, the workers of the others restart at the smaller world size")
    if launch.nnodes > 1 and not launch.rdzv_endpoint:
        problems.append("--nnodes > 1 needs --rdzv-endpoint HOST:PORT (the same on every node)")
    if launch.nnodes > 1 and not launch.rdzv_id:
        problems.append("--nnodes > 1 needs --rdzv-id ID (the same on every node, new for "
                        "each job: it names the job's run)")
    if launch.world_size > 1 and spec.training.strategy == "single":
        problems.append(f"training.strategy: 'single' cannot use {launch.world_size} processes; "
                        "set training.strategy=ddp or training.strategy=fsdp")
    if problems:
        raise SpecError([f"{source}: {problem}" for problem in problems])


def job_pipeline_run_id(launch: Launch, run_id: str) -> str:
    """The id of a multi-node job's one pipeline run: the same on every node. Of the job's
    launchers, the one whose `create_pipeline_run` succeeds leads it."""
    return uuid.uuid5(JOB_NAMESPACE, f"pipeline-run/{run_id}/{job_key(launch)}").hex


def _record_launch(tracked: TrackedRun, launch: Launch) -> None:
    shape = {"nproc_per_node": launch.nproc_per_node, "nnodes": launch.nnodes,
             "min_nodes": launch.min_nodes or launch.nnodes, "max_restarts": launch.max_restarts}
    tracked.handle.set_tags({DISTRIBUTED_RECORD: shape})  # for people; the system reads its own
    tracked.handle.set_system(SystemRecord(distributed=LaunchShape(**shape)))


def _train_on_workers(dag: Dag, spec: PipelineSpec) -> Dag:
    """`dag` with its train step's function one that torchrun workers call: it travels
    pickled, with the spec and nothing of this process (no callbacks, no installed
    notice)."""
    in_process = dag.step(TRAIN_STEP)
    return dag.replacing(replace(in_process, fn=Recorded(partial(train_in_process_group, spec))))


def train_in_process_group(spec: PipelineSpec, dataset: Dataset,
                           run: RunRecorder) -> dict[str, Any]:
    """The train step on a torchrun worker: in the job's process group, stopped by the spec's
    preemption signals (the worker's main thread installs their handlers). No credentials
    cross from the launching process: the worker's own environment (the launcher's) gives
    the token of a server's artifact proxy, under the spec's options."""
    preemption = PreemptionNotice(spec.training.checkpoint.preempt_on)
    proxy = Credentials(Settings.from_env().artifact_proxy_options())
    with process_group(spec.training.device), preemption.installed():
        return train(spec, (), preemption, proxy.merged(spec.credentials()), dataset, run)


def _executors(launch: Launch) -> ExecutorChoice:
    """The launch's choice of where steps run: the train step on its torchrun workers, the
    others where the runner puts them by default."""
    on_workers = TorchrunExecutor(launch)

    def choose(step: Step, timeout_s: float | None) -> Executor:
        return on_workers if step.name == TRAIN_STEP else executor_for(step, timeout_s)

    return choose


def _follow(tracked: TrackedRun, dag: Dag, launch: Launch, pipeline_run: str) -> None:
    """A follower's part of the job: this node's workers join the train step the leader's
    runner executes (they receive its inputs from the leader's workers), and the run is left
    to the leader. When the leader ends the run otherwise than completed (its data steps
    failed) and this node's workers have not finished `LEADER_GRACE_S` later, they are stopped
    and the run is left as the leader ended it (`TrainingError`)."""
    session, handle = tracked.session, tracked.handle
    log.info("run %s: following the job's pipeline run %s", handle.run_id, pipeline_run)
    call = StepCall(dag.step(TRAIN_STEP), 0, pipeline_run, {}, value_store(session),
                    handle.run_id, session.settings)
    seen_ended: list[float] = []

    def ended_by_leader() -> str | None:
        run = session.store.get_run(handle.run_id)
        if run.status in (RunStatus.RUNNING, RunStatus.COMPLETED):
            return None  # completed: this node's workers are done, and exit
        seen_ended.append(time.monotonic())
        if seen_ended[-1] - seen_ended[0] < LEADER_GRACE_S:
            return None  # workers that trained with the leader's stop with them
        tracked.leave()
        return (f"the job's leading launcher ended the run {run.status.value} before this "
                f"node's workers finished (pipeline run {pipeline_run}): {run.error}")

    TorchrunExecutor(launch).join(call, ended_by_leader)
    tracked.leave()
