"""Pipeline definitions as data: steps with named inputs and outputs.

A `Dag` is immutable and knows nothing about how it runs; runners own execution (`run_dag`:
in memory; `InProcessRunner`: persisted states, value store, retries, timeouts, cache).

A step's function is called with its inputs (values other steps produced, under their names
or under the argument names `renames` gives), its `params` as keywords, and the
`StepContext` under `context` when it names an argument for it. `after` orders a step after
others it takes no value from.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from trainforge.errors import SpecError, TrainforgeError

StepFn = Callable[..., Any]
ERROR_KINDS = ("transient", "timeout", "error")  # what `retry_on` may name


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` in all; before attempt n+1 the runner waits `backoff_s * 2**(n-1)` (at most
    `max_backoff_s`) times a uniform draw in [1 - jitter, 1 + jitter]. Only errors of the kinds
    in `retry_on` are retried: `transient` (storage and network errors), `timeout` (the step
    ran past its timeout), `error` (any other error of the step's code); a spec or data error
    never is."""

    attempts: int = 1
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    jitter: float = 0.25
    retry_on: tuple[str, ...] = ("transient", "timeout")

    def __post_init__(self) -> None:
        problems = []
        if self.attempts < 1:
            problems.append(f"attempts: {self.attempts} (expected 1 or more)")
        if self.backoff_s < 0 or self.max_backoff_s < 0:
            problems.append("backoff_s and max_backoff_s must not be negative")
        if not 0 <= self.jitter <= 1:
            problems.append(f"jitter: {self.jitter} (expected between 0 and 1)")
        unknown = [kind for kind in self.retry_on if kind not in ERROR_KINDS]
        if unknown:
            problems.append(f"retry_on: {unknown} (expected some of {list(ERROR_KINDS)}; "
                            "spec and data errors never retry)")
        if problems:
            raise SpecError([f"retry: {problem}" for problem in problems])

    def delay(self, attempt: int, draw: random.Random) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based)."""
        base = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        return base * draw.uniform(1 - self.jitter, 1 + self.jitter)


@dataclass(frozen=True)
class Resources:
    """What one attempt of a step needs: `processes` (more than 1: that many processes in one
    process group, under torchrun). The runner picks the step's executor from them."""

    processes: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.processes, int) or isinstance(self.processes, bool) \
                or self.processes < 1:
            raise SpecError([f"resources.processes: {self.processes!r} (expected a whole "
                             "number >= 1)"])


class StepOptions(BaseModel):
    """How a step runs beside what it takes and gives, held once, by its `Step` (and its
    `@step` definition), and validated here however it was declared (`@step(...)`, a YAML
    step, `StepOptions(...)`: `SpecError` naming the field): `after` the steps it follows
    without taking their values; `data` the params whose values are data files or folders
    (their content is hashed into the cache key); `retry` and `timeout_s` (None: the DAG's
    defaults); `cache` False never reuses outputs; `cache_ttl_s` reuses only outputs younger
    than that; `resources` what an attempt needs (where it runs: `executors.py`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    after: tuple[str, ...] = ()
    data: tuple[str, ...] = ()
    retry: RetryPolicy | None = None
    timeout_s: float | None = None
    cache: bool = True
    cache_ttl_s: float | None = None
    resources: Resources = Field(default_factory=Resources)

    def __init__(self, **options: Any) -> None:
        try:
            super().__init__(**options)
        except ValidationError as exc:
            raise SpecError([
                f"{'.'.join(str(part) for part in error['loc'])}: {error['input']!r} "
                f"({error['msg'].removeprefix('Value error, ')})"
                for error in exc.errors()]) from None

    @field_validator("timeout_s", "cache_ttl_s")
    @classmethod
    def _seconds(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("expected seconds > 0")
        return value

    def following(self, after: Iterable[str]) -> StepOptions:
        """These options, after the steps `after` instead."""
        return StepOptions(**{**dict(self), "after": tuple(after)})


@dataclass(frozen=True)
class Step:
    """One unit of work: `fn(**inputs, **params)` returns its `outputs`: a dict holding
    exactly them, the value itself when there is one, or a tuple in their order; `options`
    how it runs (`StepOptions`). `key_params` and `key_data` are for steps whose function has
    its settings and sources bound in (the training chain's): plain values its outputs depend
    on, and a function giving the content fingerprints of the data it reads, both hashed into
    the cache key and never passed to the function."""

    name: str
    fn: StepFn
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    renames: Mapping[str, str] = field(default_factory=dict)
    context: str | None = None
    options: StepOptions = field(default_factory=StepOptions)
    key_params: Mapping[str, Any] = field(default_factory=dict)
    key_data: Callable[[], Mapping[str, str]] | None = None

    def arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of a call with the input values `values` (context aside)."""
        return {**{self.renames.get(name, name): values[name] for name in self.inputs},
                **self.params}


@dataclass(frozen=True)
class Dag:
    """Steps wired by the names of what they consume and produce."""

    name: str
    steps: tuple[Step, ...]
    initial: tuple[str, ...] = ()
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_s: float | None = None
    max_parallel: int = 1

    def __post_init__(self) -> None:
        names = [s.name for s in self.steps]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise TrainforgeError(f"dag {self.name!r}: duplicate step names {sorted(duplicates)}")
        if self.max_parallel < 1:
            raise SpecError([f"dag {self.name!r}: max_parallel: {self.max_parallel} "
                             "(expected 1 or more)"])
        for step in self.steps:
            unknown = [name for name in step.options.after if name not in names]
            if unknown:
                raise SpecError([f"step {step.name!r}: after: {unknown} are not steps of "
                                 f"dag {self.name!r}"])
        producers: dict[str, str] = {}
        for step in self.steps:
            for output in step.outputs:
                if output in producers or output in self.initial:
                    other = producers.get(output)
                    raise SpecError([f"step {step.name!r}: outputs: {output!r} is produced by "
                                     + (f"step {other!r} too" if other else
                                        "the DAG's initial values too")])
                producers[output] = step.name
        for step in self.steps:
            for name in step.inputs:
                if name not in producers and name not in self.initial:
                    raise SpecError([f"step {step.name!r}: inputs: {name!r} is produced by no "
                                     f"step (known values: {sorted([*producers, *self.initial])})"])
        self.order()

    def order(self) -> list[Step]:
        """Steps in an order where every input exists before its consumer runs (Kahn)."""
        available = set(self.initial)
        pending = list(self.steps)
        ordered: list[Step] = []
        while pending:
            done = {s.name for s in ordered}
            ready = [s for s in pending
                     if set(s.inputs) <= available and set(s.options.after) <= done]
            if not ready:
                stuck = ", ".join(s.name for s in pending)
                raise SpecError([f"dag {self.name!r}: steps {stuck} wait on each other (a "
                                 "cycle through their inputs or `after`)"])
            for step in ready:
                ordered.append(step)
                available.update(step.outputs)
                pending.remove(step)
        return ordered

    def only(self, names: Iterable[str]) -> Dag:
        """The DAG of the steps named (their inputs must be among them): an `after` on a step
        left out is dropped with it."""
        keep = set(names)
        return Dag(self.name, tuple(replace(step, options=step.options.following(
                                        n for n in step.options.after if n in keep))
                                    for step in self.steps if step.name in keep),
                   self.initial, self.retry, self.timeout_s, self.max_parallel)

    def step(self, name: str) -> Step:
        """The step called `name`."""
        for step in self.steps:
            if step.name == name:
                return step
        raise TrainforgeError(f"dag {self.name!r} has no step {name!r}")

    def replacing(self, step: Step) -> Dag:
        """The DAG with its step of the same name replaced by `step`."""
        if step.name not in {s.name for s in self.steps}:
            raise TrainforgeError(f"dag {self.name!r} has no step {step.name!r} to replace")
        return Dag(self.name, tuple(step if s.name == step.name else s for s in self.steps),
                   self.initial, self.retry, self.timeout_s, self.max_parallel)

    def describe(self) -> dict[str, Any]:
        """The wiring as JSON-safe data (stored as a pipeline's `dag_config`)."""
        return {
            "name": self.name,
            "initial": list(self.initial),
            "steps": [
                {"name": s.name, "inputs": list(s.inputs), "outputs": list(s.outputs),
                 **({"after": list(s.options.after)} if s.options.after else {})}
                for s in self.steps
            ],
        }


def upstream(dag: Dag) -> dict[str, set[str]]:
    """Each step's direct predecessors: the steps producing its inputs, and its `after`."""
    producer = {output: step.name for step in dag.steps for output in step.outputs}
    return {step.name: {producer[name] for name in step.inputs if name in producer}
            | set(step.options.after) for step in dag.steps}


def downstream(dag: Dag, names: Iterable[str]) -> set[str]:
    """`names` and every step that depends on one of them, directly or not."""
    before = upstream(dag)
    found = set(names)
    grew = True
    while grew:
        more = {step for step, needs in before.items() if needs & found} - found
        found |= more
        grew = bool(more)
    return found


def to_dot(dag: Dag) -> str:
    """The DAG in Graphviz DOT: a box per step, an edge per value (labelled) or `after`."""
    producer = {output: step.name for step in dag.steps for output in step.outputs}
    lines = [f"digraph {_quoted(dag.name)} {{", "  rankdir=LR;", "  node [shape=box];"]
    lines += [f"  {_quoted(value)} [shape=ellipse, style=dashed];" for value in dag.initial]
    for step in dag.steps:
        lines.append(f"  {_quoted(step.name)};")
        for name in step.inputs:
            source = producer.get(name, name)
            lines.append(f"  {_quoted(source)} -> {_quoted(step.name)} [label={_quoted(name)}];")
        lines += [f"  {_quoted(before)} -> {_quoted(step.name)} [style=dotted];"
                  for before in step.options.after]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
