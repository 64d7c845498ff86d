"""Where one attempt of a step runs. The runner owns the step's state (its `step_runs` row, the
cache, retries); an executor only runs the attempt and hands its outputs back as values.

    InlineExecutor    in the runner's thread: inputs as the runner's process holds them,
                      outputs kept in memory (and stored when a codec takes them)
    ProcessExecutor   a spawned process, killed at the step's timeout (`_execution.py`)
    TorchrunExecutor  `resources: {processes: N}`: N processes under torchrun in one process
                      group (gloo on CPU, NCCL with CUDA), each calling the function; rank 0's
                      return value is the step's, stored and handed back by reference

`executor_for` is the runner's choice from a step's declared resources and timeout; a runner
given another choice (`InProcessRunner(executors=...)`) runs the same DAG with the same states
wherever that puts its steps. A queue worker and a Ray cluster are the next executors (the
jobs issue).

Executors other than the inline one run the step's function in other processes: it must be
defined at module level (they import it by name), its inputs must be in the value store, and
its outputs must be values a codec stores; only references cross the process boundary.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from trainforge.config import Settings
from trainforge.errors import Preempted, SpecError, StepTimedOut, TrainingError
from trainforge.orchestration._execution import (
    KILL_GRACE_S,
    AttemptFailed,
    IsolatedCall,
    call_in_process,
    importable,
    run_isolated,
)
from trainforge.orchestration._torchrun_step import CALL_FILE, JOIN_FILE
from trainforge.orchestration.context import StepContext
from trainforge.orchestration.dag import Step
from trainforge.orchestration.values import ValueRef, ValueStore
from trainforge.tracking import RunRecorder

WORKER_MODULE = "trainforge.orchestration._torchrun_step"


@dataclass(frozen=True)
class StepCall:
    """One attempt of one step, as the runner hands it to an executor: the step, its inputs'
    references (None: held in the runner's memory, no codec stores it), and where it records
    (the pipeline run, the tracked run and the settings a process attaches to it with)."""

    step: Step
    attempt: int
    pipeline_run_id: str
    inputs: Mapping[str, ValueRef | None]
    values: ValueStore
    run_id: str | None = None
    settings: Settings | None = None
    timeout_s: float | None = None
    held: Mapping[str, Any] = field(default_factory=dict)  # inputs in the runner's memory
    recorder: RunRecorder | None = None

    def isolated(self, where: str) -> IsolatedCall:
        """This call as another process runs it (names and references only), for a step run
        `where`; `SpecError` naming a function defined where a process cannot import it, or
        an input held in memory only (it cannot travel)."""
        module, qualname = importable(self.step)
        memory = [name for name, ref in self.inputs.items() if ref is None]
        if memory:
            raise SpecError([f"step {self.step.name!r}: {where}, and its input {memory[0]!r} "
                             "is held in memory (no codec stores it)"])
        return IsolatedCall(replace(self.step, key_data=None), module, qualname,
                            {name: ref.to_json() for name, ref in self.inputs.items()
                             if ref is not None},
                            self.values, self.pipeline_run_id, self.attempt, self.run_id,
                            self.settings)


@dataclass(frozen=True)
class Produced:
    """An attempt's outputs: `refs` those stored, `held` those this process holds (the inline
    executor's, stored or not)."""

    refs: dict[str, ValueRef]
    held: dict[str, Any] = field(default_factory=dict)


class Executor(Protocol):
    def execute(self, call: StepCall) -> Produced: ...


ExecutorChoice = Callable[[Step, float | None], Executor]  # (step, its timeout) -> where


class InlineExecutor:
    """The attempt in the runner's thread, on the inputs as its process holds them."""

    def execute(self, call: StepCall) -> Produced:
        step = call.step
        inputs = {name: call.held[name] if name in call.held or ref is None
                  else call.values.get(ref, f"step {step.name!r} input {name!r}")
                  for name, ref in call.inputs.items()}
        context = StepContext.make(step.name, call.pipeline_run_id, call.attempt,
                                   call.recorder)
        produced = call_in_process(step, inputs, context)
        passed_on = {id(value): call.inputs[name] for name, value in inputs.items()}
        refs: dict[str, ValueRef] = {}
        for name, value in produced.items():
            # an input handed on as it is (validate's rows when none was quarantined) is
            # already stored
            ref = passed_on.get(id(value)) or call.values.put(
                value, f"step {step.name!r} output {name!r}")
            if ref is not None:
                refs[name] = ref
        return Produced(refs, produced)


class ProcessExecutor:
    """The attempt in a spawned process, killed when the step's timeout passes."""

    def execute(self, call: StepCall) -> Produced:
        assert call.timeout_s is not None, "the runner gives this executor timed steps"
        isolated = call.isolated("timeout: a step with a timeout runs in a process of its own")
        return Produced(run_isolated(isolated, call.timeout_s))


POLL_S = 1.0  # how often a torchrun step's timeout and `abandoned` are checked
JOIN_TIMEOUT_S = 3600  # how long a node's workers wait at the rendezvous for the job's other
# nodes: the leading node runs the steps before the distributed one first
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


@dataclass(frozen=True)
class Launch:
    """How many processes run a step under torchrun: torchrun's flags of the same names.
    `min_nodes` below `nnodes` makes the job elastic (`--nnodes MIN:MAX`): when a node is lost,
    the survivors' workers restart (`max_restarts`) at the smaller world size."""

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
            args += ["--rdzv-backend", "c10d", "--rdzv-endpoint", self.rdzv_endpoint,
                     "--rdzv-conf", f"join_timeout={JOIN_TIMEOUT_S}"]
        else:
            args.append("--standalone")
        if self.rdzv_id:
            args += ["--rdzv-id", self.rdzv_id]
        return [*args, "-m", WORKER_MODULE, *worker_args]


Abandoned = Callable[[], "str | None"]  # why to stop waiting for the other nodes, or None


class TorchrunExecutor:
    """The attempt as `launch.world_size` processes under torchrun, each calling the step's
    function inside one process group (`_torchrun_step.py`); global rank 0 records to the run
    and stores the outputs, whose references are the only thing that comes back.

    With `launch.nnodes` > 1, one node's runner executes the step (`execute`) and every other
    node `join`s it: its workers receive the call's inputs from the executing node's over the
    process group, so nothing but the rendezvous tells the nodes apart. A worker's error comes
    back with its rank, kind and message; a preempted worker's as `Preempted`; the step's
    timeout kills the whole group; a signal to this process (in the main thread) is passed on
    to it."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch

    def execute(self, call: StepCall) -> Produced:
        isolated = call.isolated(
            f"resources.processes: {self.launch.nproc_per_node} runs it under torchrun")
        with self._folder(call, CALL_FILE, isolated) as work:
            exit_code, received = self._torchrun(work, call)
            result = work / "result.json"
            if exit_code == 0 and result.exists():
                refs = json.loads(result.read_text())
                return Produced({name: ValueRef.from_json(ref) for name, ref in refs.items()})
            raise _worker_failure(work, call.step.name, exit_code, received)

    def join(self, call: StepCall, abandoned: Abandoned) -> None:
        """This node's workers of a step another node's runner `execute`s, from this node's
        own definition of it (`call` without inputs: they come from the executing node, so
        no credentials cross); returns once they finished, else raises their error
        (`TrainingError`, or `Preempted`). `abandoned` is asked every second
        while they wait or run, until a signal to this process is passed on to them (they
        are stopping then): a reason stops them and raises `TrainingError` with it."""
        isolated = call.isolated(f"it joins the torchrun job of {self.launch.rdzv_id}")
        with self._folder(call, JOIN_FILE, isolated) as work:
            exit_code, received = self._torchrun(work, call, abandoned)
            if exit_code != 0:
                failure = _worker_failure(work, call.step.name, exit_code, received)
                if isinstance(failure, AttemptFailed):  # no runner records this node's part
                    raise TrainingError(str(failure))
                raise failure

    @contextmanager
    def _folder(self, call: StepCall, name: str, isolated: IsolatedCall) -> Iterator[Path]:
        with tempfile.TemporaryDirectory(prefix=f"trainforge-{call.step.name}-") as folder:
            work = Path(folder)
            (work / name).write_bytes(pickle.dumps(isolated))
            yield work

    def _torchrun(self, work: Path, call: StepCall, abandoned: Abandoned | None = None,
                  ) -> tuple[int, list[signal.Signals]]:
        """torchrun's exit code, and the signals passed on to it, in order."""
        threads = str(max(1, (os.cpu_count() or 1) // self.launch.nproc_per_node))
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads),
               # the workers import the step's module from where this process does (a spawned
               # process is handed the parent's sys.path the same way)
               "PYTHONPATH": os.pathsep.join(path for path in sys.path if path),
               # Restarted workers in the agent's store would read the dead workers' addresses
               # (pytorch/pytorch#135712); global rank 0 hosts a fresh store for each attempt.
               "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
        command = [sys.executable, "-m", "torch.distributed.run",
                   *self.launch.torchrun_args([str(work)])]
        process = subprocess.Popen(command, env=env, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        tail = _Tail(process, work / "torchrun.log")
        deadline = None if call.timeout_s is None else time.monotonic() + call.timeout_s
        with _forwarding(process) as received:
            while process.poll() is None:
                try:
                    process.wait(POLL_S)
                except subprocess.TimeoutExpired:
                    pass
                if deadline is not None and time.monotonic() >= deadline:
                    _kill(process)
                    raise StepTimedOut(
                        f"step {call.step.name!r} ran past its timeout of {call.timeout_s:g} s "
                        f"(attempt {call.attempt}); its {self.launch.world_size} processes "
                        "were killed")
                if abandoned is not None and not received \
                        and (reason := abandoned()) is not None:
                    _kill(process)
                    raise TrainingError(reason)
        tail.join()
        if received and process.returncode != 0 and not list(work.glob("error-*.json")):
            raise _signalled(received[0])
        return process.returncode, received


class _Tail:
    """torchrun's stderr, passed on to this process's as it comes (the workers' log lines)
    and kept in `log` for an error that no worker reported."""

    def __init__(self, process: subprocess.Popen[str], log: Path) -> None:
        self._thread = threading.Thread(target=self._copy, args=(process, log), daemon=True,
                                        name="trainforge-torchrun-stderr")
        self._thread.start()

    @staticmethod
    def _copy(process: subprocess.Popen[str], log: Path) -> None:
        assert process.stderr is not None
        with log.open("w") as kept:
            for line in process.stderr:
                kept.write(line)
                sys.stderr.write(line)

    def join(self) -> None:
        self._thread.join()


@contextmanager
def _forwarding(process: subprocess.Popen[str]) -> Iterator[list[signal.Signals]]:
    """Signals to this process passed on to torchrun's (which passes them to its workers: a
    preempted worker checkpoints and reports it); what arrived, in order. Handlers can only be
    set in the main thread: elsewhere signals keep their handling."""
    received: list[signal.Signals] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def forward(number: int, frame: FrameType | None) -> None:
        received.append(signal.Signals(number))
        with suppress(ProcessLookupError):
            os.killpg(process.pid, number)

    previous = {number: signal.signal(number, forward) for number in FORWARDED}
    try:
        yield received
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _kill(process: subprocess.Popen[str]) -> None:
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(KILL_GRACE_S)


def _signalled(number: signal.Signals) -> BaseException:
    """What a signal passed on to workers that reported nothing means: SIGINT a Ctrl+C,
    SIGTERM a preemption before training checkpointed, others an error."""
    if number == signal.SIGINT:
        return KeyboardInterrupt()
    if number == signal.SIGTERM:
        return Preempted(number.name)
    return TrainingError(f"the step's workers were stopped by {number.name}")


def _worker_failure(work: Path, step: str, exit_code: int,
                    received: list[signal.Signals]) -> BaseException:
    """The first error a rank wrote in the workers' last restart (the others' are mostly
    collectives broken by it), else torchrun's own last lines. A preempted rank's is
    `Preempted`, by the signal this process passed on (else the rank's own)."""
    written = [json.loads(path.read_text()) for path in work.glob("error-*.json")]
    if written:
        last = max(found["restart"] for found in written)
        error = min((found for found in written if found["restart"] == last),
                    key=lambda found: (found["at"], found["rank"]))
        if error["kind"] == "preempted":
            return Preempted(received[0].name if received else error["signal"], error["step"])
        return AttemptFailed(error["kind"],
                             f"{error['message']} (worker rank {error['rank']})")
    log = (work / "torchrun.log")
    tail = log.read_text().strip().splitlines()[-3:] if log.exists() else []
    return AttemptFailed("error", f"step {step!r}: torchrun exited {exit_code} before a worker "
                         f"reported: {' / '.join(tail) or 'no output'}")


def executor_for(step: Step, timeout_s: float | None) -> Executor:
    """The executor the runner gives a step: torchrun for more than one process, a process of
    its own with a timeout, else the runner's thread."""
    if step.options.resources.processes > 1:
        return TorchrunExecutor(Launch(step.options.resources.processes))
    if timeout_s is not None:
        return ProcessExecutor()
    return InlineExecutor()

