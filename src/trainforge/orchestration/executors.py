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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from trainforge.config import Settings
from trainforge.errors import SpecError, StepTimedOut
from trainforge.orchestration._execution import (
    KILL_GRACE_S,
    AttemptFailed,
    IsolatedCall,
    call_in_process,
    importable,
    run_isolated,
)
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
        return IsolatedCall(self.step, module, qualname,
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


class TorchrunExecutor:
    """The attempt as `processes` processes under torchrun (`--standalone`: one node, a free
    rendezvous port), each importing and calling the step's function inside one process
    group; rank 0 stores its outputs and names them in a result file, the only thing that
    comes back. A worker's error comes back with its kind and message; the step's timeout
    kills the whole group."""

    def __init__(self, processes: int) -> None:
        self.processes = processes

    def execute(self, call: StepCall) -> Produced:
        isolated = call.isolated(f"resources.processes: {self.processes} runs it under torchrun")
        with tempfile.TemporaryDirectory(prefix=f"trainforge-{call.step.name}-") as folder:
            work = Path(folder)
            (work / "call.pkl").write_bytes(pickle.dumps(isolated))
            exit_code = self._torchrun(work, call)
            result = work / "result.json"
            if exit_code == 0 and result.exists():
                refs = json.loads(result.read_text())
                return Produced({name: ValueRef.from_json(ref) for name, ref in refs.items()})
            raise _worker_failure(work, call.step.name, exit_code)

    def _torchrun(self, work: Path, call: StepCall) -> int:
        threads = str(max(1, (os.cpu_count() or 1) // self.processes))
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads),
               # the workers import the step's module from where this process does (a spawned
               # process is handed the parent's sys.path the same way)
               "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nnodes", "1", "--nproc-per-node", str(self.processes),
                   "--max-restarts", "0", "-m", WORKER_MODULE, str(work)]
        process = subprocess.Popen(command, env=env, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, errors = process.communicate(timeout=call.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(KILL_GRACE_S)
            raise StepTimedOut(
                f"step {call.step.name!r} ran past its timeout of {call.timeout_s:g} s "
                f"(attempt {call.attempt}); its {self.processes} processes were killed"
            ) from None
        (work / "torchrun.log").write_text(errors or "")
        return process.returncode


def _worker_failure(work: Path, step: str, exit_code: int) -> AttemptFailed:
    """The first error a rank wrote (the others' are mostly collectives broken by it), else
    torchrun's own last lines."""
    written = [json.loads(path.read_text()) for path in work.glob("error-*.json")]
    if written:
        error = min(written, key=lambda found: (found["at"], found["rank"]))
        return AttemptFailed(error["kind"], f"{error['message']} (rank {error['rank']})")
    log = (work / "torchrun.log")
    tail = log.read_text().strip().splitlines()[-3:] if log.exists() else []
    return AttemptFailed("error", f"step {step!r}: torchrun exited {exit_code} before a worker "
                         f"reported: {' / '.join(tail) or 'no output'}")


def executor_for(step: Step, timeout_s: float | None) -> Executor:
    """The executor the runner gives a step: torchrun for more than one process, a process of
    its own with a timeout, else the runner's thread."""
    if step.resources.processes > 1:
        return TorchrunExecutor(step.resources.processes)
    if timeout_s is not None:
        return ProcessExecutor()
    return InlineExecutor()

