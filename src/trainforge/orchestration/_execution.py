"""One attempt of one step: called in this process, or (a step with a timeout) in a process of
its own that is killed when the timeout passes; the kind of error an attempt raised, which
decides whether it is retried.

A step in its own process reads its inputs from the value store and writes its outputs there,
so only references cross the process boundary; its function is imported again by module and
name (it must be defined at module level), and its context's recorder is the same tracked run,
attached anew.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import pickle
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, replace
from logging.handlers import QueueHandler, QueueListener
from types import FunctionType
from typing import Any

from trainforge.config import Settings
from trainforge.errors import (
    DataError,
    ObjectNotFound,
    ObjectStoreError,
    SpecError,
    StepTimedOut,
    StoreUnavailable,
    TrainforgeError,
    ValueStoreError,
)
from trainforge.orchestration.context import StepContext
from trainforge.orchestration.dag import Step
from trainforge.orchestration.replay import RECORDS, CapturingRecorder
from trainforge.orchestration.values import ValueRef, ValueStore

KILL_GRACE_S = 5.0


class AttemptFailed(Exception):
    """An attempt's error as the runner records it: its kind and message (the original chained
    when it was raised in this process)."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


def error_kind(exc: BaseException) -> str:
    """`timeout`, `spec`, `data`, `transient` (storage and network: may pass on retry) or
    `error` (anything else)."""
    if isinstance(exc, AttemptFailed):
        return exc.kind
    if isinstance(exc, StepTimedOut):
        return "timeout"
    if isinstance(exc, SpecError):
        return "spec"
    if isinstance(exc, DataError):
        return "data"
    if isinstance(exc, (StoreUnavailable, ConnectionError, TimeoutError)) or (
            isinstance(exc, ObjectStoreError) and not isinstance(exc, ObjectNotFound)):
        return "transient"
    if any("ConnectionError" in cls.__name__ or "Timeout" in cls.__name__
           for cls in type(exc).__mro__):
        return "transient"
    return "error"


def describe(exc: BaseException) -> str:
    if isinstance(exc, (AttemptFailed, TrainforgeError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def outputs_of(step: Step, returned: Any) -> dict[str, Any]:
    """The named outputs in what `step.fn` returned: a dict holding exactly them, the value
    itself for a single output, or a tuple in their order (nothing for no outputs)."""
    names = step.outputs
    if isinstance(returned, dict) and set(returned) == set(names) and names:
        return dict(returned)
    if len(names) == 1:
        return {names[0]: returned}
    if not names and returned is None:
        return {}
    if isinstance(returned, tuple) and len(returned) == len(names):
        return dict(zip(names, returned, strict=True))
    shown = sorted(returned) if isinstance(returned, dict) else type(returned).__name__
    raise AttemptFailed("error", f"step {step.name!r} returned {shown}, declared outputs "
                        f"{list(names)}: return a dict of them, or a tuple in their order")


@dataclass(frozen=True)
class IsolatedCall:
    """What a child process needs to run one attempt: only names and references."""

    step: Step
    module: str
    qualname: str
    inputs: dict[str, dict[str, Any]]
    values: ValueStore
    pipeline_run_id: str
    attempt: int
    run_id: str | None
    settings: Settings | None


def importable(step: Step) -> tuple[str, str]:
    """(module, qualified name) a child process imports the step's function by, or ("", "")
    for a callable object that travels pickled (a standard step's bound function); SpecError
    naming the step when neither can reach another process."""
    fn = step.fn
    if not isinstance(fn, FunctionType):
        try:
            pickle.dumps(fn)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise SpecError([f"step {step.name!r}: it runs in another process, and its "
                             f"function {fn!r} cannot be pickled: {exc}"]) from None
        return "", ""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or "<locals>" in qualname or "<lambda>" in qualname:
        raise SpecError([f"step {step.name!r}: timeout: a step with a timeout runs in a "
                         f"process of its own, which imports its function by name, and "
                         f"{qualname or fn!r} is not defined at module level"])
    return module, qualname


def run_isolated(call: IsolatedCall, timeout_s: float) -> dict[str, ValueRef]:
    """One attempt in a spawned process, killed after `timeout_s` (`StepTimedOut`); its
    outputs' references, or `AttemptFailed` with the child's error kind and message."""
    if call.module:
        call = replace(call, step=replace(call.step, fn=_imported_in_child))
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    records: Any = context.Queue()
    logs = QueueListener(records, _Relay())  # the child's log lines, shown as this process's
    logs.start()
    level = logging.getLogger("trainforge").getEffectiveLevel()
    process = context.Process(target=_child, args=(call, sender, records, level), daemon=True,
                              name=f"trainforge-step-{call.step.name}")
    process.start()
    sender.close()
    try:
        if not receiver.poll(timeout_s):
            process.kill()
            process.join(KILL_GRACE_S)
            raise StepTimedOut(f"step {call.step.name!r} ran past its timeout of {timeout_s:g} s "
                               f"(attempt {call.attempt}); its process was killed")
        try:
            outcome = receiver.recv()
        except EOFError:
            process.join(KILL_GRACE_S)
            raise AttemptFailed("error", f"step {call.step.name!r}: its process died "
                                f"(exit code {process.exitcode})") from None
    finally:
        receiver.close()
        process.join(KILL_GRACE_S)
        if process.is_alive():
            process.kill()
        logs.stop()
        records.close()
    if outcome[0] == "ok":
        return {name: ValueRef.from_json(ref) for name, ref in outcome[1].items()}
    raise AttemptFailed(outcome[1], outcome[2])


def _imported_in_child(**arguments: Any) -> Any:
    """What stands for the step's function in a pickled call: the child imports the real one
    by `module` and `qualname`."""
    raise AssertionError("the child process calls the function it imported")


class _Relay(logging.Handler):
    """Hands a record a step's process logged to the logger of its name here, so it shows
    wherever this process shows its own (the CLI's console, a test's capture)."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger(record.name).handle(record)


def _child(call: IsolatedCall, sender: Any, records: Any, level: int) -> None:
    """The child's side: import, read inputs, call, store outputs, send references; its
    `trainforge` log records (a step's `ctx.log`) go to the parent through `records`."""
    logger = logging.getLogger("trainforge")
    logger.handlers[:] = [QueueHandler(records)]
    logger.setLevel(level)
    logger.propagate = False
    recorder = None
    try:
        if call.run_id is not None and call.settings is not None:
            recorder = attach(call.settings, call.run_id)
        outputs = store_outputs(call, call_elsewhere(call, recorder))
        if recorder is not None:
            recorder.close()  # what the step recorded is stored before the step is done
        sender.send(("ok", outputs))
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        sender.send(("error", error_kind(exc), describe(exc) + where(exc)))
    finally:
        if recorder is not None:
            recorder.close()
        sender.close()


def call_elsewhere(call: IsolatedCall, recorder: Any) -> dict[str, Any]:
    """The step's outputs, called in a process other than the runner's: its function imported
    by name (or unpickled with the call), its inputs read from the value store, its context
    recording to `recorder`; with what it recorded (`with_records`)."""
    fn = call.step.fn
    if call.module:
        target: Any = importlib.import_module(call.module)
        for part in call.qualname.split("."):
            target = getattr(target, part)
        fn = getattr(target, "fn", target)
    inputs = {name: call.values.get(ValueRef.from_json(ref), f"input {name!r}")
              for name, ref in call.inputs.items()}
    arguments = call.step.arguments(inputs)
    capture = _capturing(call.step, recorder)
    if call.step.context is not None:
        arguments[call.step.context] = StepContext.make(
            call.step.name, call.pipeline_run_id, call.attempt, capture or recorder)
    return with_records(outputs_of(call.step, fn(**arguments)), capture)


def store_outputs(call: IsolatedCall, produced: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The references (as JSON) of `produced`, stored in the call's value store;
    `ValueStoreError` for a value no codec stores (it cannot travel back)."""
    refs = {}
    for name, value in produced.items():
        ref = call.values.put(value, f"step {call.step.name!r} output {name!r}")
        if ref is None:
            raise ValueStoreError(
                f"step {call.step.name!r} output {name!r}: a {type(value).__name__} has no "
                "codec, and a step in a process of its own hands on only values the value "
                "store holds (frames, feature pipelines, tensors, plain JSON values)")
        refs[name] = ref.to_json()
    return refs


def where(exc: BaseException) -> str:
    """Where a non-trainforge error was raised (its last frame), to add to its message."""
    if isinstance(exc, TrainforgeError):
        return ""
    frames = traceback.extract_tb(exc.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def attach(settings: Settings, run_id: str) -> Any:
    """A handle on the tracked run `run_id`, for a step's context in another process."""
    from trainforge.storage.artifacts import open_artifact_store
    from trainforge.tracking import RunHandle, default_store

    return RunHandle.attach(default_store(settings), run_id,
                            open_artifact_store(settings.artifact_root), settings=settings)


def call_in_process(step: Step, inputs: Mapping[str, Any], context: StepContext,
                    keep_records: bool = True) -> dict[str, Any]:
    """One attempt in this process: the step's named outputs, with what it recorded
    (`with_records`; not with `keep_records` False: nothing caches it)."""
    arguments = step.arguments(inputs)
    capture = _capturing(step, context.recorder) if keep_records else None
    if step.context is not None:
        arguments[step.context] = replace(context, recorder=capture or context.recorder)
    return with_records(outputs_of(step, step.fn(**arguments)), capture)


def _capturing(step: Step, recorder: Any) -> CapturingRecorder | None:
    """A recorder keeping what a step that may be taken from the cache records (a run that
    reuses its outputs replays it), for a step given a recorder."""
    if not step.options.cache or step.context is None or recorder is None:
        return None
    return CapturingRecorder(recorder)


def with_records(produced: dict[str, Any], capture: CapturingRecorder | None) -> dict[str, Any]:
    """`produced`, and under `RECORDS` what the step recorded (when it recorded anything)."""
    records = capture.records() if capture is not None else None
    return produced if records is None else {**produced, RECORDS: records}
