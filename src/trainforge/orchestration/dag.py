"""Pipeline definitions as data: steps with named inputs and outputs.

A `Dag` is immutable and knows nothing about how it runs; runners (`runner.py`) own execution,
and later retries, caching and workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from trainforge.errors import TrainforgeError

StepFn = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class Step:
    """One unit of work: `fn(**inputs)` returns a dict holding exactly `outputs`."""

    name: str
    fn: StepFn
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dag:
    """Steps wired by the names of what they consume and produce."""

    name: str
    steps: tuple[Step, ...]
    initial: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = [s.name for s in self.steps]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise TrainforgeError(f"dag {self.name!r}: duplicate step names {sorted(duplicates)}")
        producers: dict[str, str] = {}
        for step in self.steps:
            for output in step.outputs:
                if output in producers or output in self.initial:
                    raise TrainforgeError(
                        f"dag {self.name!r}: {output!r} produced twice "
                        f"({producers.get(output, 'initial')} and {step.name})"
                    )
                producers[output] = step.name
        self.order()

    def order(self) -> list[Step]:
        """Steps in an order where every input exists before its consumer runs (Kahn)."""
        available = set(self.initial)
        pending = list(self.steps)
        ordered: list[Step] = []
        while pending:
            ready = [s for s in pending if set(s.inputs) <= available]
            if not ready:
                missing = {i for s in pending for i in s.inputs} - available - _outputs(pending)
                detail = f"inputs never produced: {sorted(missing)}" if missing else "a cycle"
                stuck = ", ".join(s.name for s in pending)
                raise TrainforgeError(f"dag {self.name!r}: steps {stuck} cannot run: {detail}")
            for step in ready:
                ordered.append(step)
                available.update(step.outputs)
                pending.remove(step)
        return ordered

    def describe(self) -> dict[str, Any]:
        """The wiring as JSON-safe data (stored as a pipeline's `dag_config`)."""
        return {
            "name": self.name,
            "initial": list(self.initial),
            "steps": [
                {"name": s.name, "inputs": list(s.inputs), "outputs": list(s.outputs)}
                for s in self.steps
            ],
        }


def _outputs(steps: Iterable[Step]) -> set[str]:
    return {o for s in steps for o in s.outputs}
