"""Runners of a `Dag`.

    run_dag          every step once, in memory, in this process (no states, no cache): a
                     DAG tried out in a notebook or a test
    InProcessRunner  a pipeline run: states persisted per attempt (`pipeline_runs`,
                     `step_runs`), values through the value store, cache, retries with
                     backoff, each attempt where an executor puts it (`executors.py`: the
                     thread, a process of its own with a timeout, torchrun), `max_parallel`
                     steps at once in threads (with 1, in the calling thread, so signals
                     and Ctrl+C reach the step), and `resume` of a pipeline run that failed
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Protocol

from trainforge.config import Settings
from trainforge.entities import PipelineRun, PipelineRunStatus, StepRun, StepState
from trainforge.errors import PipelineFailed, Preempted, TrainforgeError
from trainforge.orchestration._execution import (
    AttemptFailed,
    call_in_process,
    describe,
    error_kind,
)
from trainforge.orchestration.cache import lookup, step_key, stored_refs
from trainforge.orchestration.context import StepContext
from trainforge.orchestration.dag import Dag, Step, downstream, upstream
from trainforge.orchestration.executors import ExecutorChoice, StepCall, executor_for
from trainforge.orchestration.fingerprint import Fingerprinter
from trainforge.orchestration.replay import RECORDS, replay
from trainforge.orchestration.values import ValueRef, ValueStore
from trainforge.storage.contracts import PipelineRunStore
from trainforge.tracking import RunRecorder


@dataclass(frozen=True)
class StepEvent:
    """What happened to a step; `error`: the failed attempt's (for "failed", "retrying")."""

    step: str
    state: str  # "started" | "finished" | "failed" | "retrying" | "cached" | "skipped"
    seconds: float = 0.0
    error: str | None = None


StepListener = Callable[[StepEvent], None]


def run_dag(
    dag: Dag, initial: dict[str, Any], listener: StepListener | None = None,
    recorder: RunRecorder | None = None,
) -> dict[str, Any]:
    """Execute every step once; return all values produced (initial ones included). A step
    that asks for its context gets one recording to `recorder`.

    A step failing stops the run: the exception propagates after the listener hears `failed`.
    """
    missing = set(dag.initial) - set(initial)
    if missing:
        raise TrainforgeError(f"dag {dag.name!r}: missing initial values {sorted(missing)}")
    values = dict(initial)
    notify = listener or (lambda event: None)
    for step in dag.order():
        values.update(_run_step(step, values, notify, recorder))
    return values


def _run_step(step: Step, values: dict[str, Any], notify: StepListener,
              recorder: RunRecorder | None) -> dict[str, Any]:
    notify(StepEvent(step.name, "started"))
    started = time.perf_counter()
    context = StepContext.make(step.name, "", 1, recorder)
    try:
        produced = call_in_process(step, {name: values[name] for name in step.inputs}, context,
                                   keep_records=False)
    except BaseException as exc:
        notify(StepEvent(step.name, "failed", time.perf_counter() - started, describe(exc)))
        if isinstance(exc, AttemptFailed):  # the step returned other outputs than declared
            raise TrainforgeError(str(exc)) from None
        raise
    notify(StepEvent(step.name, "finished", time.perf_counter() - started))
    return produced


@dataclass(frozen=True)
class RunOptions:
    """How a pipeline run uses the cache and its parallelism: `use_cache` False (--no-cache)
    runs every step; `rerun` names steps that run whatever their key; `max_parallel` (None:
    the DAG's) steps at once."""

    use_cache: bool = True
    rerun: frozenset[str] = frozenset()
    max_parallel: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"use_cache": self.use_cache, "rerun": sorted(self.rerun),
                "max_parallel": self.max_parallel}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunOptions:
        return cls(bool(data.get("use_cache", True)), frozenset(data.get("rerun", ())),
                   data.get("max_parallel"))


class Runner(Protocol):
    """Runs a DAG as one pipeline run (persisted), or continues one (`resume`)."""

    def run(self, dag: Dag, *, initial: Mapping[str, Any] | None = None,
            options: RunOptions | None = None, source: Mapping[str, Any] | None = None,
            resume: str | None = None, pipeline_run_id: str | None = None,
            on_start: Callable[[PipelineRun], None] | None = None) -> PipelineOutcome: ...


@dataclass(frozen=True)
class PipelineOutcome:
    """A finished pipeline run: its record, each step's last attempt, and its values."""

    pipeline_run: PipelineRun
    steps: dict[str, StepRun]
    refs: dict[str, ValueRef]
    memory: dict[str, Any]
    values: ValueStore

    def value(self, name: str) -> Any:
        """A value of the run: from memory, else decoded from the value store."""
        if name in self.memory:
            return self.memory[name]
        if name not in self.refs:
            raise KeyError(f"pipeline run {self.pipeline_run.pipeline_run_id} has no value "
                           f"{name!r}")
        return self.values.get(self.refs[name], f"value {name!r}")

    def executed(self) -> list[str]:
        """The steps whose last attempt ran their code (not cached, not skipped)."""
        return [name for name, attempt in self.steps.items()
                if attempt.state in (StepState.SUCCEEDED, StepState.FAILED)]


class InProcessRunner:
    """Runs steps from threads of this process (`max_parallel` at once), each attempt where
    `executors` puts it (by default `executor_for`: in the thread, a step with a timeout in a
    process of its own, one declaring `resources.processes` > 1 under torchrun); persists every
    attempt's state to `store`, passes values through `values`, reuses outputs by cache key,
    retries by each step's policy.

    `recorder` is the tracked run steps record to (their context's), `settings` what a step in
    another process attaches to it with; `sleep` waits between attempts (tests pass one that
    records); `seed` seeds the backoff's jitter."""

    def __init__(self, store: PipelineRunStore, values: ValueStore, *,
                 recorder: RunRecorder | None = None, settings: Settings | None = None,
                 listener: StepListener | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 seed: int | None = None, executors: ExecutorChoice = executor_for) -> None:
        self.store = store
        self.values = values
        self.recorder = recorder
        self.settings = settings
        self.executors = executors
        self.listener = listener or (lambda event: None)
        self.sleep = sleep
        self.draw = random.Random(seed)

    def run(self, dag: Dag, *, initial: Mapping[str, Any] | None = None,
            options: RunOptions | None = None, source: Mapping[str, Any] | None = None,
            resume: str | None = None, pipeline_run_id: str | None = None,
            on_start: Callable[[PipelineRun], None] | None = None) -> PipelineOutcome:
        """Run `dag` as a new pipeline run (its id `pipeline_run_id`, or a new one), or
        continue the pipeline run `resume`: only the steps without stored outputs and those
        downstream of them run. `on_start` hears of the pipeline run once its row is written
        (created, or running again), before any step starts. `PipelineFailed` naming the
        failed steps when one fails; the steps that do not depend on it still run, unless it
        was preempted (`Preempted`): then no step starts any more (those running finish), and
        a resume runs the rest."""
        initial = dict(initial or {})
        missing = set(dag.initial) - set(initial)
        if missing:
            raise TrainforgeError(f"dag {dag.name!r}: missing initial values {sorted(missing)}")
        if resume is None:
            options = options or RunOptions()
            record = self.store.create_pipeline_run(
                pipeline_run_id or uuid.uuid4().hex, dag.name, dict(source or {}),
                options.to_json(), getattr(self.recorder, "run_id", None))
            earlier: list[StepRun] = []
        else:
            record = self.store.get_pipeline_run(resume)
            options = options or RunOptions.from_json(record.options)
            earlier = self.store.list_step_runs(resume)
            record = self.store.set_pipeline_run_status(resume, PipelineRunStatus.RUNNING)
        if on_start is not None:
            on_start(record)
        execution = _Execution(self, dag, record, options, initial, earlier)
        try:
            execution.run()
        except BaseException:
            self.store.set_pipeline_run_status(record.pipeline_run_id, PipelineRunStatus.FAILED)
            raise
        status = (PipelineRunStatus.FAILED if execution.failed else
                  PipelineRunStatus.SUCCEEDED)
        record = self.store.set_pipeline_run_status(record.pipeline_run_id, status)
        if execution.failed:
            raise PipelineFailed(record.pipeline_run_id, execution.failed) from execution.cause
        return PipelineOutcome(record, execution.last, dict(execution.refs),
                               dict(execution.memory), self.values)


class _StepFailed(Exception):
    """A step's last attempt failed: its message is what `PipelineFailed` lists, the step's
    own error is the cause."""


class _Execution:
    """One pipeline run's moving state: values so far, each step's last attempt."""

    def __init__(self, runner: InProcessRunner, dag: Dag, record: PipelineRun,
                 options: RunOptions, initial: dict[str, Any], earlier: list[StepRun]) -> None:
        self.runner = runner
        self.dag = dag
        self.record = record
        self.options = options
        self.memory: dict[str, Any] = dict(initial)
        self.refs: dict[str, ValueRef] = {}
        self.last: dict[str, StepRun] = {}
        self.failed: dict[str, str] = {}
        self.cause: BaseException | None = None
        self.fingerprints = Fingerprinter()
        self.lock = threading.Lock()
        self.attempts = {run.step: run.attempt for run in earlier}
        self.reused = self._reusable(earlier)

    def _reusable(self, earlier: list[StepRun]) -> set[str]:
        """Steps of a resumed run whose stored outputs are kept: those whose last attempt has
        outputs in the value store, unless a step they depend on runs again."""
        last: dict[str, StepRun] = {}
        for attempt in earlier:
            last[attempt.step] = attempt
        kept = set()
        for name, attempt in last.items():
            refs = stored_refs(attempt.outputs)
            if (attempt.state.has_outputs and refs is not None
                    and not self.runner.values.missing(list(refs.values()))):
                kept.add(name)
        names = {step.name for step in self.dag.steps}
        kept &= names
        kept -= downstream(self.dag, names - kept)
        for name in kept:
            self.last[name] = last[name]
            self.refs.update(stored_refs(last[name].outputs) or {})
        return kept

    def run(self) -> None:
        before = upstream(self.dag)
        pending = [step for step in self.dag.order() if step.name not in self.reused]
        rows = {step.name: self._add(step.name, StepState.PENDING) for step in pending}
        parallel = self.options.max_parallel or self.dag.max_parallel
        blocked: dict[str, str] = {}  # a step whose dependents do not run → why
        stopped: str | None = None  # why no step starts any more: a step was preempted
        with (_InlineExecutor() if parallel == 1 else
              ThreadPoolExecutor(parallel, thread_name_prefix="trainforge-step")) as pool:
            running: dict[Future[None], Step] = {}
            while pending or running:
                with self.lock:
                    finished = set(self.last)
                for step in list(pending):
                    needs = before[step.name]
                    if stopped is not None or needs & blocked.keys():
                        pending.remove(step)
                        reason = (stopped if stopped is not None
                                  else blocked[min(needs & blocked.keys())])
                        blocked[step.name] = reason
                        self._skip(rows[step.name], reason)
                    elif needs <= finished and len(running) < parallel:
                        pending.remove(step)
                        running[pool.submit(self._step, step, rows[step.name])] = step
                if not running:
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    step = running.pop(future)
                    try:
                        future.result()
                    except _StepFailed as exc:
                        blocked[step.name] = f"not run: {step.name} did not succeed"
                        self.failed[step.name] = str(exc)
                        self.cause = self.cause or exc.__cause__
                        if isinstance(exc.__cause__, Preempted):  # the machine is going away
                            stopped = f"not run: {step.name} was preempted"

    def _add(self, step: str, state: StepState) -> StepRun:
        with self.lock:
            self.attempts[step] = self.attempts.get(step, 0) + 1
            attempt = self.attempts[step]
        return self.runner.store.add_step_run(self.record.pipeline_run_id, step, attempt, state)

    def _skip(self, row: StepRun, reason: str) -> None:
        now = _now()
        self.runner.store.update_step_run(row.step_run_id, StepState.SKIPPED, ended_at=now,
                                          error=reason)
        with self.lock:
            self.last[row.step] = replace(row, state=StepState.SKIPPED, ended_at=now,
                                          error=reason)
        self.runner.listener(StepEvent(row.step, "skipped"))

    def _step(self, step: Step, row: StepRun) -> None:
        """Reuse the step's cached outputs, or run its attempts; `_StepFailed` after the
        last."""
        store = self.runner.store
        inputs = {name: self.refs.get(name) for name in step.inputs}
        key = step_key(step, inputs, self.fingerprints)
        refusal = ("no-cache" if not self.options.use_cache else
                   "rerun" if step.name in self.options.rerun else None)
        decision, hit = lookup(store, self.runner.values, step, key, refusal)
        parts = {**key.parts, "decision": decision,
                 **({"reason": key.reason} if key.reason else {})}
        if hit is not None:
            self._reuse(step, row, hit, key.digest, parts)
            return
        policy = step.options.retry or self.dag.retry
        timeout = (step.options.timeout_s if step.options.timeout_s is not None
                   else self.dag.timeout_s)
        for number in range(1, policy.attempts + 1):
            started = _now()
            store.update_step_run(row.step_run_id, StepState.RUNNING, started_at=started,
                                  cache_key=key.digest, cache_parts=parts)
            self.runner.listener(StepEvent(step.name, "started"))
            clock = time.perf_counter()
            try:
                outputs, refs = self._attempt(step, row.attempt, inputs, timeout)
            except BaseException as exc:  # noqa: BLE001 - recorded, then retried or raised
                kind, message = error_kind(exc), describe(exc)
                retry = number < policy.attempts and kind in policy.retry_on
                state = StepState.RETRYING if retry else StepState.FAILED
                ended = _now()
                store.update_step_run(row.step_run_id, state, ended_at=ended,
                                      error=f"{kind}: {message}")
                self.runner.listener(StepEvent(step.name, "retrying" if retry else "failed",
                                               time.perf_counter() - clock,
                                               f"attempt {row.attempt}: {kind}: {message}"))
                if not retry:
                    with self.lock:
                        self.last[step.name] = replace(row, state=state, started_at=started,
                                                       ended_at=ended, error=f"{kind}: {message}")
                    if not isinstance(exc, Exception):
                        raise  # Ctrl+C, SystemExit: the run stops here
                    raise _StepFailed(message) from exc
                self.runner.sleep(policy.delay(number, self.runner.draw))
                row = self._add(step.name, StepState.PENDING)
                continue
            ended = _now()
            store.update_step_run(row.step_run_id, StepState.SUCCEEDED, ended_at=ended,
                                  outputs=outputs)
            self._finish(replace(row, state=StepState.SUCCEEDED, started_at=started,
                                 ended_at=ended, cache_key=key.digest, cache_parts=parts,
                                 outputs=outputs), refs)
            self.runner.listener(StepEvent(step.name, "finished", time.perf_counter() - clock))
            return

    def _reuse(self, step: Step, row: StepRun, hit: StepRun, digest: str | None,
               parts: dict[str, Any]) -> None:
        """The step taken from the cache: `hit`'s outputs, and what it recorded written to
        this run (`replay`)."""
        refs = stored_refs(hit.outputs) or {}
        records = refs.pop(RECORDS, None)
        if records is not None and self.runner.recorder is not None:
            replay(self.runner.values.get(records, f"what step {step.name!r} recorded"),
                   self.runner.recorder)
        now = _now()
        self.runner.store.update_step_run(
            row.step_run_id, StepState.CACHED, started_at=now, ended_at=now, cache_key=digest,
            cache_parts=parts, outputs=hit.outputs, cached_from=hit.step_run_id)
        self._finish(replace(row, state=StepState.CACHED, started_at=now, ended_at=now,
                             cache_key=digest, cache_parts=parts, outputs=hit.outputs,
                             cached_from=hit.step_run_id), refs)
        self.runner.listener(StepEvent(step.name, "cached"))

    def _attempt(self, step: Step, attempt: int, inputs: dict[str, ValueRef | None],
                 timeout: float | None) -> tuple[dict[str, Any], dict[str, ValueRef]]:
        """Run the step once, where the runner's executor choice puts it: (outputs as
        recorded, references of the stored ones)."""
        with self.lock:
            held = {name: self.memory[name] for name in inputs if name in self.memory}
        call = StepCall(step, attempt, self.record.pipeline_run_id, inputs, self.runner.values,
                        self.record.run_id, self.runner.settings, timeout, held,
                        self.runner.recorder)
        produced = self.runner.executors(step, timeout).execute(call)
        refs = {name: ref for name, ref in produced.refs.items() if name != RECORDS}
        with self.lock:  # later steps here take them as they are
            self.memory.update({name: value for name, value in produced.held.items()
                                if name != RECORDS})
        recorded = {name: refs[name].to_json() if name in refs
                    else {"memory": type(produced.held[name]).__name__}
                    for name in step.outputs}
        if RECORDS in produced.refs:
            recorded[RECORDS] = produced.refs[RECORDS].to_json()
        return recorded, refs

    def _finish(self, row: StepRun, refs: dict[str, ValueRef]) -> None:
        with self.lock:
            self.refs.update(refs)
            self.last[row.step] = row


class _InlineExecutor:
    """The executor of `max_parallel` 1: each step runs in the calling thread when submitted,
    so a signal's handler, Ctrl+C and thread-bound state (CUDA streams, a process group)
    reach it as they would a plain call. Exceptions travel in the future; a `BaseException`
    that is not an `Exception` (Ctrl+C) propagates at once."""

    def __enter__(self) -> _InlineExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., None], *args: Any) -> Future[None]:
        future: Future[None] = Future()
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - handed over like a pool's future
            future.set_exception(exc)
        else:
            future.set_result(None)
        return future


def _now() -> datetime:
    return datetime.now(timezone.utc)
