"""Run a `Dag` in this process, step after step, in dependency order."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainforge.errors import TrainforgeError
from trainforge.orchestration.dag import Dag, Step


@dataclass(frozen=True)
class StepEvent:
    step: str
    state: str  # "started" | "finished" | "failed"
    seconds: float = 0.0


StepListener = Callable[[StepEvent], None]


def run_dag(
    dag: Dag, initial: dict[str, Any], listener: StepListener | None = None
) -> dict[str, Any]:
    """Execute every step once; return all values produced (initial ones included).

    A step failing stops the run: the exception propagates after the listener hears `failed`.
    """
    missing = set(dag.initial) - set(initial)
    if missing:
        raise TrainforgeError(f"dag {dag.name!r}: missing initial values {sorted(missing)}")
    values = dict(initial)
    notify = listener or (lambda event: None)
    for step in dag.order():
        values.update(_run_step(step, values, notify))
    return values


def _run_step(step: Step, values: dict[str, Any], notify: StepListener) -> dict[str, Any]:
    notify(StepEvent(step.name, "started"))
    started = time.perf_counter()
    try:
        produced = step.fn(**{name: values[name] for name in step.inputs})
    except BaseException:
        notify(StepEvent(step.name, "failed", time.perf_counter() - started))
        raise
    if set(produced) != set(step.outputs):
        raise TrainforgeError(
            f"step {step.name!r} returned {sorted(produced)}, declared {sorted(step.outputs)}"
        )
    notify(StepEvent(step.name, "finished", time.perf_counter() - started))
    return produced
