"""A pipeline as one tracked run whose train step runs on torchrun workers.

    launcher (trainforge run SPEC --nproc-per-node N), one per node
      ├── creates the run, or joins it (one run id for the whole job), and records the launch
      ├── creates the job's pipeline run, or finds it created by another node's launcher
      │     (one pipeline run per job): the launcher that created it leads, the others follow
      ├── leader: runs the pipeline's steps once: ingest, validate, profile, split, features;
      │   then the train step
      │     starts N workers per node with torchrun's elastic launcher, handing them the
      │     dataset the features step stored in the value store; each reads it back and
      │     trains (`run_worker`):
      │       worker rank 0: reports to the run (metrics, checkpoints, weights), puts the
      │                      trained model in the value store and names it in the run's
      │                      `system.launch` record, under the pipeline run's id
      │       worker rank > 0: reports nowhere (`NullRun`)
      │     and the trained model is read back from that record, waiting for it when global
      │     rank 0 ran on another node
      │   evaluate, gate, register here, once; the run ends completed, or failed with the
      │   first failing worker's error
      └── follower (`--nnodes` > 1): waits until the leader's features step has stored the
          dataset, starts its node's workers on it, and returns; when its workers fail it ends
          the run failed with their error

Workers find the run through `TRAINFORGE_RUN_ID`, the pipeline run they train for through
`TRAINFORGE_PIPELINE_RUN`, the dataset through `TRAINFORGE_DATASET` (its value references: a
`data.streaming` dataset is its plan, from which each worker reads only its own shards,
through the spec's `data.storage_options`, which its session's credentials give the plan's
decoder), and the store, artifacts and values through the settings of the environment they
inherit (`TRAINFORGE_HOME`, `TRAINFORGE_DB`, `TRAINFORGE_ARTIFACTS`): each worker opens its
session from them. With
`--nnodes` > 1 every node runs a launcher with the same `--rdzv-endpoint` and `--rdzv-id`, from
which each derives the job's run id (`job_run_id`) and its pipeline run id
(`job_pipeline_run_id`): the first launcher creates the run, the others join it; the first to
create the pipeline run leads it. Given `--resume RUN_ID` (or `training.checkpoint.resume:
auto`), every launcher names the same run to continue: the first reopens it for the job
(`job_key`), the others join it, and the workers continue from its newest checkpoint. When the
leader's node is lost, the run stays unfinished: its checkpoints hold the training, and
`--resume` finishes it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from trainforge.entities import DataVersion, Run, RunStatus
from trainforge.errors import Conflict, Preempted, SpecError, TrainingError
from trainforge.orchestration import Dag, RunOptions, value_store
from trainforge.orchestration.values import ValueRef, ValueStore
from trainforge.pipeline._dag import Recorded
from trainforge.pipeline._dataset import Dataset
from trainforge.pipeline._plan import PipelinePlan, plan_pipeline
from trainforge.pipeline._run import PipelineResult, execute_in_process, run_tracked
from trainforge.pipeline._steps import TrainedModel, train
from trainforge.session import Session
from trainforge.storage import Store, all_items
from trainforge.storage.artifacts import ArtifactStore
from trainforge.tracking import (
    LaunchEntry,
    LaunchShape,
    RunHandle,
    RunRecorder,
    SystemRecord,
    system_of,
)
from trainforge.train import process_group

RUN_ID_ENV = "TRAINFORGE_RUN_ID"
PIPELINE_RUN_ENV = "TRAINFORGE_PIPELINE_RUN"
DATASET_ENV = "TRAINFORGE_DATASET"  # the dataset's value references
DISTRIBUTED_RECORD = "distributed"  # a tag for people: the launch's shape (the system reads
# its own copy, `SystemRecord.distributed`)
RANK0_WAIT_S = 600.0  # how long a leader waits for rank 0 on another node to name its model
POLL_S = 0.2
WORKER_MODULE = "trainforge.pipeline._worker"
JOB_NAMESPACE = uuid.UUID("dce1f42d-06d4-452f-9a4b-2221ec2166a1")  # of `job_run_id`
log = logging.getLogger("trainforge")


@dataclass(frozen=True)
class Launch:
    """How many processes run the job: torchrun's flags of the same names. `min_nodes` below
    `nnodes` makes the job elastic (`--nnodes MIN:MAX`): when a node is lost, the survivors'
    workers restart (`max_restarts`) at the smaller world size and resume from the newest
    checkpoint with the same global batch."""

    nproc_per_node: int
    nnodes: int = 1
    rdzv_endpoint: str | None = None
    max_restarts: int = 0
    rdzv_id: str | None = None
    min_nodes: int | None = None  # None: exactly `nnodes`

    @property
    def world_size(self) -> int:
        """The most processes the job runs on."""
        return self.nproc_per_node * self.nnodes

    @property
    def nodes(self) -> str:
        """`--nnodes` as torchrun takes it: N, or MIN:MAX for an elastic job."""
        elastic = self.min_nodes is not None and self.min_nodes != self.nnodes
        return f"{self.min_nodes}:{self.nnodes}" if elastic else str(self.nnodes)

    def torchrun_args(self, worker_args: list[str]) -> list[str]:
        args = ["--nnodes", self.nodes, "--nproc-per-node", str(self.nproc_per_node),
                "--max-restarts", str(self.max_restarts)]
        if self.rdzv_endpoint:
            args += ["--rdzv-backend", "c10d", "--rdzv-endpoint", self.rdzv_endpoint]
        else:
            args.append("--standalone")
        if self.rdzv_id:
            args += ["--rdzv-id", self.rdzv_id]
        return [*args, "-m", WORKER_MODULE, *worker_args]


def launch_pipeline(
    path: str | Path, overrides: list[str] | None, launch: Launch, resume: str | None = None,
    *, allow_neutral_changes: bool = False, session: Session | None = None,
) -> PipelineResult | None:
    """Run the pipeline of `path` as one tracked run over `launch.world_size` processes.

    Errors as `run_pipeline`: `SpecError` before any run exists (also for a launch the spec
    cannot use), `RunFailed` when a worker fails, naming the run and the worker's error.
    Workers restarted by torchrun (`max_restarts`), like a `resume`d run, continue from the
    run's newest checkpoint. With `launch.nnodes` > 1 each node calls this: the launcher that
    leads the job (the first to create its pipeline run) returns the result, the others None
    (the leader reports the run).
    """
    overrides = list(overrides or [])
    plan = plan_pipeline(path, overrides)
    _check_launch(plan.spec, launch, str(path), resume)
    session = (session or Session.open()).with_credentials(plan.spec.credentials())
    execute = partial(_execute_launched, launch, [str(Path(path).resolve()), *overrides], plan,
                      session)
    multi_node = launch.nnodes > 1
    return run_tracked(plan, session, execute=execute, resume=resume,
                       allow_neutral_changes=allow_neutral_changes,
                       run_id=job_run_id(plan.spec.name, launch) if multi_node else None,
                       job=job_key(launch) if multi_node else None)


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


@dataclass(frozen=True)
class _Job:
    """What a launcher starts its node's workers with: the launch, the workers' arguments,
    where things are recorded, and the run and pipeline run the workers train for."""

    launch: Launch
    worker_args: list[str]
    session: Session
    run_id: str
    pipeline_run: str

    def start_workers(self, dataset: str) -> None:
        """This node's workers, on `dataset` (its value references as JSON), until they
        finish. `TrainingError` naming the first failing worker; for a signal to the
        launcher, what `_stopped_by` makes of it."""
        from torch.distributed.elastic.multiprocessing import SignalException
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
        from torch.distributed.run import parse_args
        from torch.distributed.run import run as torchrun

        threads = str(max(1, (os.cpu_count() or 1) // self.launch.nproc_per_node))
        env = {RUN_ID_ENV: self.run_id, PIPELINE_RUN_ENV: self.pipeline_run,
               DATASET_ENV: dataset,
               "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads),
               # Restarted workers in the agent's store would read the dead workers' addresses
               # (pytorch/pytorch#135712); global rank 0 hosts a fresh store for each attempt.
               "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
        try:
            with _environment(env):
                torchrun(parse_args(self.launch.torchrun_args(self.worker_args)))
        except ChildFailedError as exc:
            rank, failure = exc.get_first_failure()
            raise TrainingError(f"worker rank {rank} failed (exit code {failure.exitcode}): "
                                f"{failure.message}") from None
        except SignalException as exc:
            raise _stopped_by(exc.sigval, self.session.store, self.run_id) from None


def _execute_launched(launch: Launch, worker_args: list[str], plan: PipelinePlan,
                      session: Session, handle: RunHandle,
                      dag: Dag) -> dict[str, Any] | None:
    """The `execute` of a launched run: as the leader, the DAG in this process with its train
    step on torchrun workers; as a follower, only this node's workers (None)."""
    shape = {"nproc_per_node": launch.nproc_per_node, "nnodes": launch.nnodes,
             "min_nodes": launch.min_nodes or launch.nnodes, "max_restarts": launch.max_restarts}
    handle.set_tags({DISTRIBUTED_RECORD: shape})  # for people; the system reads its own copy
    handle.set_system(SystemRecord(distributed=LaunchShape(**shape)))
    pipeline_run = (job_pipeline_run_id(launch, handle.run_id) if launch.nnodes > 1
                    else uuid.uuid4().hex)
    job = _Job(launch, worker_args, session, handle.run_id, pipeline_run)
    dataset_step = _dataset_step(dag)
    try:  # created here, so that exactly one launcher leads; its runner then continues it
        session.store.create_pipeline_run(pipeline_run, dag.name, plan.source_record(),
                                           RunOptions().to_json(), handle.run_id)
    except Conflict:
        _follow(job, dataset_step, handle)
        return None
    in_process = next(step for step in dag.steps if step.name == "train")
    on_workers = partial(_train_on_workers, job, dataset_step)
    dag = dag.replacing(replace(in_process, fn=Recorded(on_workers)))
    return execute_in_process(plan, session, None, handle, dag, pipeline_run=pipeline_run)


def _dataset_step(dag: Dag) -> str:
    """The step whose output `dataset` the train step takes."""
    return next(step.name for step in dag.steps if "dataset" in step.outputs)


def _train_on_workers(job: _Job, dataset_step: str, dataset: Dataset,
                      run: RunRecorder) -> dict[str, Any]:
    """The leader's train step: the workers started on the dataset its features step stored
    (`dataset`, the step's input, is that value in this process: the workers read the stored
    copy), the model global rank 0 trained read back from the value store."""
    stored = _stored_dataset(job.session.store, job.pipeline_run, dataset_step)
    assert stored is not None  # the runner starts the train step once its input is there
    job.start_workers(stored)
    trained = _trained_by_rank0(job.session.store, job.run_id, job.pipeline_run,
                                RANK0_WAIT_S if job.launch.nnodes > 1 else 0.0)
    return {"trained": value_store(job.session).get(trained, "the model rank 0 trained")}


def _follow(job: _Job, dataset_step: str, handle: RunHandle) -> None:
    """A follower's part of the job: once the leader's `dataset_step` has stored the dataset,
    this node's workers train on it. When the leader's pipeline run stops before that, this
    launcher leaves the run as the leader ended it (`TrainingError`, the handle closed)."""
    store = job.session.store
    log.info("run %s: following the job's pipeline run %s; waiting for its dataset", job.run_id,
             job.pipeline_run)
    while (dataset := _stored_dataset(store, job.pipeline_run, dataset_step)) is None:
        run = store.get_run(job.run_id)
        if run.status is not RunStatus.RUNNING:
            handle.close()
            raise TrainingError(
                f"the job's leading launcher ended the run {run.status.value} before its "
                f"dataset was ready (pipeline run {job.pipeline_run}): {run.error}")
        time.sleep(POLL_S)
    job.start_workers(dataset)


def _stored_dataset(store: Store, pipeline_run: str, dataset_step: str) -> str | None:
    """The dataset `dataset_step` of `pipeline_run` stored, as the workers' `DATASET_ENV`:
    its value references as JSON, None while the step has not succeeded. `TrainingError` when
    the step kept it in memory, where no worker can read it."""
    attempts = [attempt for attempt in store.list_step_runs(pipeline_run)
                if attempt.step == dataset_step]
    if not attempts or not attempts[-1].state.has_outputs:
        return None
    output = attempts[-1].outputs["dataset"]
    if "memory" in output:
        raise TrainingError(
            f"step {dataset_step!r} kept its dataset in memory ({output['memory']} is not a "
            "value the value store takes): torchrun workers read the dataset from the value "
            "store")
    return json.dumps(output)


def _trained_by_rank0(store: Store, run_id: str, pipeline_run: str,
                      wait_s: float) -> ValueRef:
    """The trained model global rank 0 named in the run's `system.launch` for
    `pipeline_run`, waiting up to `wait_s` for rank 0 on another node to finish.
    `TrainingError` when the run ended meanwhile (a worker on another node failed) or none
    came."""
    deadline = time.monotonic() + wait_s
    while True:
        run = store.get_run(run_id)
        launch = system_of(run).launch
        if launch is not None and launch.pipeline_run == pipeline_run:
            return ValueRef.from_json(launch.trained)
        if run.status is not RunStatus.RUNNING:
            raise TrainingError(f"the run ended {run.status.value} on another node: "
                                f"{run.error}")
        if time.monotonic() >= deadline:
            raise TrainingError(
                f"the workers finished but global rank 0 named no trained model in "
                f"{wait_s:.0f} s; its checkpoints are kept: continue the run with --resume")
        time.sleep(POLL_S)


def _stopped_by(signum: signal.Signals, store: Store, run_id: str) -> BaseException:
    """What a signal to the launcher means once torchrun stopped the workers with it (they
    checkpoint at the next step on SIGTERM): SIGTERM a preemption after the run's newest
    checkpoint, SIGINT a Ctrl+C, others a training error."""
    if signum == signal.SIGTERM:
        saved = all_items(lambda cursor: store.list_checkpoints(run_id,
                                                                       cursor=cursor))
        return Preempted(signum.name, saved[-1].step if saved else None)
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return TrainingError(f"the launcher was stopped by {signum.name}")


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables (inherited by the workers) for the duration of the block."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_worker(path: str, overrides: list[str]) -> None:
    """One torchrun worker of a launched run: trains on the dataset its launcher stored (see
    the module docstring for the roles)."""
    plan = plan_pipeline(path, overrides)
    run_id = os.environ.get(RUN_ID_ENV)
    if not run_id:
        raise TrainingError(f"{RUN_ID_ENV} is not set: start workers with `trainforge run SPEC "
                            "--nproc-per-node N`")
    session = Session.open().with_credentials(plan.spec.credentials())
    values = value_store(session)
    preemption = plan.preemption_notice()
    with process_group(plan.spec.training.device), preemption.installed():
        dataset = _worker_dataset(values)
        if int(os.environ.get("RANK", "0")) != 0:
            train(plan.spec, (), preemption, dataset, NullRun(run_id, session.artifacts))
            return
        handle = RunHandle.attach(session.store, run_id, session.artifacts,
                                  settings=session.settings)
        try:
            trained: TrainedModel = train(plan.spec, (), preemption, dataset, handle)["trained"]
        finally:
            handle.close()
    stored = values.put(trained, "the trained model")
    assert stored is not None  # a trained model is a registered value type
    session.store.set_system(run_id, SystemRecord(launch=LaunchEntry(
        pipeline_run=os.environ[PIPELINE_RUN_ENV], trained=stored.to_json())).entries())


def _worker_dataset(values: ValueStore) -> Dataset:
    """The dataset the launcher stored, decoded with the worker's session's credentials (a
    streamed dataset's plan reopens its source with the spec's data storage options)."""
    stored = os.environ.get(DATASET_ENV)
    if not stored:
        raise TrainingError(f"{DATASET_ENV} is not set: start workers with `trainforge run "
                            "SPEC --nproc-per-node N`")
    dataset: Dataset = values.get(ValueRef.from_json(json.loads(stored)), "the dataset")
    return dataset


class NullRun:
    """The run as ranks > 0 see it: every write is dropped, so only rank 0 records."""

    def __init__(self, run_id: str, artifacts: ArtifactStore) -> None:
        self.run_id = run_id
        self.artifacts = artifacts

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        pass

    def set_tags(self, tags: dict[str, Any]) -> None:
        pass

    def set_summary(self, metrics: dict[str, float]) -> None:
        pass

    def set_data_version(self, version: DataVersion) -> None:
        pass

    def put_artifact(self, name: str, data: bytes) -> str:
        return self.artifact_uri(name)

    def log_artifact(self, path: str | Path, name: str | None = None) -> str:
        return self.artifact_uri(name or Path(path).name)

    def artifact_uri(self, name: str = "") -> str:
        root = self.artifacts.run_uri(self.run_id)
        return f"{root}/{name}" if name else root

    def info(self) -> Run:
        raise TrainingError(f"run {self.run_id}: only rank 0 reads its run back")


def configure_worker_logging() -> None:
    """Plain `trainforge` log lines on stderr, prefixed by torchrun with the rank."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("trainforge")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
