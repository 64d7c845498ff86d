"""User steps: `@step` on a function and `Pipeline([...])` of them, or the same from YAML
(`steps_from_yaml`), turned into a `Dag`.

A step function's arguments say what it takes: one annotated `StepContext` (or named `ctx` /
`context`) gets the context; the others without a default are inputs (values other steps
produce, under the argument's name unless `inputs` maps it to another); those with a default
are params (`params` overrides them). It returns its outputs: the value itself for one, a
dict or a tuple in order for several.

    @step(outputs=["frame"], retries=2, timeout=60)
    def load(source: str = "data/rows.csv") -> pd.DataFrame: ...

    pipeline = Pipeline([load, scale.using(params={"factor": 3})], name="demo")
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trainforge.errors import SpecError
from trainforge.orchestration.dag import Dag, Resources, RetryPolicy, Step, StepOptions

_CONTEXT_NAMES = ("ctx", "context")


@dataclass(frozen=True)
class StepDeclaration:
    """A step as declared, before its function's signature is read: its name (None: the
    function's), outputs, inputs (argument -> value name, where they differ), params, and
    how it runs (`StepOptions`)."""

    name: str | None = None
    outputs: tuple[str, ...] = ()
    inputs: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    options: StepOptions = field(default_factory=StepOptions)


class StepDefinition:
    """A function with its step declaration; calling it calls the function."""

    def __init__(self, fn: Callable[..., Any], declared: StepDeclaration) -> None:
        self.fn = fn
        self.declared = declared
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def name(self) -> str:
        return self.declared.name or self.fn.__name__

    def using(self, *, name: str | None = None, inputs: Mapping[str, str] | None = None,
              outputs: Sequence[str] | None = None, params: Mapping[str, Any] | None = None,
              after: Sequence[str] | None = None) -> StepDefinition:
        """The same function as another step: renamed, wired to other values (`inputs`:
        argument -> value name; other `outputs`), other params (merged over these), placed
        after other steps."""
        declared = self.declared
        return StepDefinition(self.fn, replace(
            declared, name=name or declared.name,
            inputs={**declared.inputs, **(inputs or {})},
            outputs=tuple(outputs) if outputs is not None else declared.outputs,
            params={**declared.params, **(params or {})},
            options=declared.options.following(after) if after is not None
            else declared.options))

    def to_step(self) -> Step:
        return make_step(self.fn, self.declared)


def step(fn: Callable[..., Any] | None = None, *, outputs: Sequence[str] = (),
         name: str | None = None, inputs: Mapping[str, str] | None = None,
         params: Mapping[str, Any] | None = None, after: Sequence[str] = (),
         data: Sequence[str] = (), retries: int = 0, backoff_s: float = 1.0,
         max_backoff_s: float = 60.0, jitter: float = 0.25,
         retry_on: Sequence[str] | None = None, timeout: float | None = None,
         cache: bool = True, ttl: float | None = None, processes: int = 1) -> Any:
    """Declare a function a pipeline step (see the module's docstring). `retries` more
    attempts after the first, waiting `backoff_s` doubled each time with `jitter`, for errors
    of the kinds in `retry_on` (default: transient and timeout); `timeout` seconds per attempt
    (the step then runs in a process of its own); `data` names params holding data paths,
    whose content is hashed into the cache key; `cache` False or a `ttl` in seconds limit
    reuse; `processes` > 1 runs each attempt as that many processes under torchrun, in one
    process group (rank 0's return value is the step's). `SpecError` naming the field of a
    bad one, where it is written."""
    retry = None
    if retries or retry_on is not None:
        retry = RetryPolicy(retries + 1, backoff_s, max_backoff_s, jitter,
                            tuple(retry_on) if retry_on is not None else ("transient",
                                                                           "timeout"))
    declared = StepDeclaration(name, tuple(outputs), dict(inputs or {}), dict(params or {}),
                               StepOptions(after=tuple(after), data=tuple(data), retry=retry,
                                           timeout_s=timeout, cache=cache, cache_ttl_s=ttl,
                                           resources=Resources(processes)))

    def declare(function: Callable[..., Any]) -> StepDefinition:
        make_step(function, declared)  # a bad declaration fails where it is written
        return StepDefinition(function, declared)

    return declare(fn) if fn is not None else declare


def make_step(fn: Callable[..., Any], declared: StepDeclaration) -> Step:
    """The `Step` of `fn` as `declared`: inputs, params and context from its signature."""
    name = str(declared.name or getattr(fn, "__name__", "step"))
    where = f"step {name!r} ({_qualified(fn)})"
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise SpecError([f"{where}: its signature cannot be read: {exc}"]) from exc
    context, inputs, defaults = None, [], {}
    for argument in signature.parameters.values():
        if argument.kind in (argument.VAR_POSITIONAL, argument.VAR_KEYWORD):
            raise SpecError([f"{where}: *{argument.name}: a step takes named arguments only"])
        if _is_context(argument):
            context = argument.name
        elif argument.default is inspect.Parameter.empty:
            inputs.append(argument.name)
        else:
            defaults[argument.name] = argument.default
    problems = [f"{where}: inputs: {arg!r} is not an argument without a default"
                for arg in declared.inputs if arg not in inputs]
    problems += [f"{where}: params: {param!r} is not an argument with a default "
                 f"(params: {sorted(defaults)})" for param in declared.params
                 if param not in defaults]
    problems += [f"{where}: data: {param!r} is not a param" for param in declared.options.data
                 if param not in defaults]
    if problems:
        raise SpecError(problems)
    values = tuple(declared.inputs.get(arg, arg) for arg in inputs)
    renames = {declared.inputs[arg]: arg for arg in inputs
               if declared.inputs.get(arg, arg) != arg}
    return Step(name, fn, values, declared.outputs, {**defaults, **declared.params}, renames,
                context, declared.options)


def _is_context(argument: inspect.Parameter) -> bool:
    annotation = argument.annotation
    named = getattr(annotation, "__name__", annotation)
    return named == "StepContext" or (annotation is inspect.Parameter.empty
                                      and argument.name in _CONTEXT_NAMES)


def _qualified(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


def as_step(item: StepDefinition | Step | Callable[..., Any]) -> Step:
    """The `Step` of a `@step` function, a `Step`, or a plain function (options from its
    signature)."""
    if isinstance(item, StepDefinition):
        return item.to_step()
    if isinstance(item, Step):
        return item
    return make_step(item, StepDeclaration())


class Pipeline:
    """A DAG of user steps: `Pipeline([load, scale, train], name="demo", max_parallel=2)`.
    Defaults for every step: `retries` (with `backoff_s`, `retry_on`) and `timeout`."""

    def __init__(self, steps: Sequence[StepDefinition | Step | Callable[..., Any]], *,
                 name: str, max_parallel: int = 1, retries: int = 0, backoff_s: float = 1.0,
                 retry_on: Sequence[str] = ("transient", "timeout"),
                 timeout: float | None = None) -> None:
        self.dag = Dag(name, tuple(as_step(item) for item in steps), max_parallel=max_parallel,
                       retry=RetryPolicy(retries + 1, backoff_s, retry_on=tuple(retry_on)),
                       timeout_s=timeout)

    @property
    def name(self) -> str:
        return self.dag.name


def import_function(target: str, where: str) -> Callable[..., Any]:
    """The function `package.module:function` names; SpecError naming `where` and why not."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise SpecError([f"{where}: {target!r} (expected 'package.module:function')"])
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to see
        raise SpecError([f"{where}: {target!r} does not import: "
                         f"{type(exc).__name__}: {exc}"]) from exc
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise SpecError([f"{where}: {target!r}: module {module_name!r} has no {part!r}"])
        found = getattr(found, part)
    if not callable(found):
        raise SpecError([f"{where}: {target!r} is a {type(found).__name__}, not a function"])
    return found.fn if isinstance(found, StepDefinition) else found


def steps_from_yaml(entries: Any, where: str, folder: Path | None = None) -> list[Step]:
    """The `steps:` list of a YAML file: each with `name`, `uses`, `inputs` (a list, or a
    mapping argument -> value), `outputs`, `params`, `after`, `data`, `retries`, `backoff`,
    `retry_on`, `timeout`, `cache`, `ttl`, `resources` (`{processes: N}`). Errors name
    `where`, the entry and the field. Params that are paths are relative to `folder` (the
    YAML file's, as a training spec's paths are to it): a param named in `data` when it is a
    relative path, any other text param when that file exists there."""
    if not isinstance(entries, list):
        raise SpecError([f"{where}: steps: expected a list of steps"])
    steps = []
    for index, entry in enumerate(entries):
        at = f"{where}: steps[{index}]"
        if not isinstance(entry, dict):
            raise SpecError([f"{at}: expected a mapping with name, uses, outputs, ..."])
        unknown = sorted(set(entry) - _YAML_FIELDS)
        if unknown:
            raise SpecError([f"{at}: unknown fields {unknown} (expected some of "
                             f"{sorted(_YAML_FIELDS)})"])
        if "uses" not in entry:
            raise SpecError([f"{at}.uses: missing ('package.module:function')"])
        name = entry.get("name")
        label = f"{at} ({name})" if name else at
        fn = import_function(str(entry["uses"]), f"{label}.uses")
        declared = _yaml_options(entry, label)
        if folder is not None:
            declared = replace(declared, params=_paths_from(folder, declared.params,
                                                            declared.options.data))
        steps.append(make_step(fn, declared))
    return steps


def _paths_from(folder: Path, params: Mapping[str, Any],
                data: Sequence[str]) -> dict[str, Any]:
    """`params` with the relative paths among them resolved against `folder`."""
    resolved = dict(params)
    for key, value in params.items():
        if not isinstance(value, str) or not value or "://" in value or Path(value).is_absolute():
            continue
        candidate = folder / value
        if key in data or candidate.exists():
            resolved[key] = str(candidate)
    return resolved


_YAML_FIELDS = {"name", "uses", "inputs", "outputs", "params", "after", "data", "retries",
                "backoff", "retry_on", "timeout", "cache", "ttl", "resources"}


def _yaml_options(entry: dict[str, Any], at: str) -> StepDeclaration:
    inputs = entry.get("inputs") or {}
    if isinstance(inputs, list):
        inputs = {str(name): str(name) for name in inputs}
    if not isinstance(inputs, dict):
        raise SpecError([f"{at}.inputs: expected a list of value names, or a mapping "
                         "argument -> value name"])
    lists = {key: _names(entry, key, at) for key in ("outputs", "after", "data")}
    params = entry.get("params") or {}
    if not isinstance(params, dict):
        raise SpecError([f"{at}.params: expected a mapping of argument -> value"])
    options = {"after": lists["after"], "data": lists["data"], "retry": yaml_retry(entry, at),
               "timeout_s": yaml_seconds(entry, "timeout", at),
               "cache": entry.get("cache", True), "cache_ttl_s": yaml_seconds(entry, "ttl", at),
               "resources": _yaml_resources(entry, at)}
    try:
        checked = StepOptions(**options)
    except SpecError as exc:
        raise SpecError([f"{at}.{problem}" for problem in exc.problems]) from exc
    return StepDeclaration(entry.get("name"), lists["outputs"],
                           {str(k): str(v) for k, v in inputs.items()}, params, checked)


def _yaml_resources(entry: dict[str, Any], at: str) -> Resources:
    given = entry.get("resources") or {}
    if not isinstance(given, dict) or set(given) - {"processes"}:
        raise SpecError([f"{at}.resources: {given!r} (expected a mapping with processes)"])
    try:
        return Resources(**given)
    except SpecError as exc:
        raise SpecError([f"{at}.{problem}" for problem in exc.problems]) from exc


def _names(entry: dict[str, Any], key: str, at: str, sep: str = ".") -> tuple[str, ...]:
    value = entry.get(key)
    if value is not None and not (isinstance(value, list)
                                  and all(isinstance(v, str) for v in value)):
        raise SpecError([f"{at}{sep}{key}: expected a list of names"])
    return tuple(value or ())


def yaml_retry(entry: dict[str, Any], at: str, sep: str = ".") -> RetryPolicy | None:
    """The retry policy `retries`, `backoff` and `retry_on` of a YAML step (or, with `sep`
    ": ", of a whole YAML file) declare; None when they declare none. Errors name `at` and the
    field."""
    retries, backoff = entry.get("retries", 0), entry.get("backoff", 1.0)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise SpecError([f"{at}{sep}retries: {retries!r} (expected a whole number >= 0)"])
    if not isinstance(backoff, (int, float)) or isinstance(backoff, bool) or backoff < 0:
        raise SpecError([f"{at}{sep}backoff: {backoff!r} (expected seconds >= 0)"])
    retry_on = _names(entry, "retry_on", at, sep)
    if not (retries or "retry_on" in entry or "backoff" in entry):
        return None
    try:
        return RetryPolicy(retries + 1, float(backoff),
                           retry_on=retry_on or ("transient", "timeout"))
    except SpecError as exc:
        raise SpecError([f"{at}{sep}{problem}" for problem in exc.problems]) from exc


def yaml_seconds(entry: dict[str, Any], key: str, at: str, sep: str = ".") -> float | None:
    """The seconds > 0 that `key` of a YAML step or file holds, or None when absent."""
    value = entry.get(key)
    if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                              or value <= 0):
        raise SpecError([f"{at}{sep}{key}: {value!r} (expected seconds > 0)"])
    return None if value is None else float(value)
