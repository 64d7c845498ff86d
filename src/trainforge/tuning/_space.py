"""The search space: `tuning.space` as Optuna distributions, a trial's sampled values as spec
overrides (`path=value`), and the check that each path names a spec field its values fit.

A trial's spec is the pipeline's with its values applied as overrides, so its run records the
spec path and overrides it ran (`system.spec`) like any run, and PBT builds a member's spec the
same way (`trial_overrides`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import optuna
import yaml
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from trainforge.config import ParamSpec, PipelineSpec
from trainforge.errors import SpecError

GridValue = str | int | float | bool | None
_PLAIN = (str, int, float, bool, type(None))


def distribution(param: ParamSpec) -> BaseDistribution:
    """The Optuna distribution of one dimension; a choice of lists or mappings becomes a
    choice of their JSON texts (Optuna's choices are plain values)."""
    if param.type == "choice":
        return CategoricalDistribution(_choices(param))
    assert param.low is not None and param.high is not None  # ParamSpec checked both
    log = param.type == "loguniform" or param.log
    if param.type == "int":
        return IntDistribution(int(param.low), int(param.high), log=log,
                               step=int(param.step or 1))
    return FloatDistribution(param.low, param.high, log=log, step=param.step)


def sample(trial: optuna.Trial, space: Mapping[str, ParamSpec]) -> dict[str, Any]:
    """One value per spec path, suggested by `trial` (its sampler decides)."""
    values: dict[str, Any] = {}
    for path, param in space.items():
        dist = distribution(param)
        if isinstance(dist, CategoricalDistribution):
            picked = trial.suggest_categorical(path, dist.choices)
            values[path] = param.values[dist.choices.index(picked)] if param.values else picked
        elif isinstance(dist, IntDistribution):
            values[path] = trial.suggest_int(path, dist.low, dist.high, step=dist.step,
                                             log=dist.log)
        else:
            assert isinstance(dist, FloatDistribution)
            values[path] = trial.suggest_float(path, dist.low, dist.high, step=dist.step,
                                               log=dist.log)
    return values


def decoded(space: Mapping[str, ParamSpec], params: Mapping[str, Any]) -> dict[str, Any]:
    """Optuna's recorded params of a trial as spec values (JSON texts of a choice decoded)."""
    values = dict(params)
    for path, param in space.items():
        if param.type == "choice" and path in values and param.values:
            values[path] = param.values[_choices(param).index(values[path])]
    return values


def grid(space: Mapping[str, ParamSpec], source: str) -> dict[str, list[GridValue]]:
    """The values a grid search visits per path, as Optuna's `GridSampler` takes them;
    `SpecError` naming the path of a dimension without a `grid` (a choice visits its values)."""
    found: dict[str, list[GridValue]] = {}
    for path, param in space.items():
        if param.type == "choice":
            found[path] = (list(_choices(param)) if param.grid is None
                           else [_plain(v) for v in param.grid])
        elif param.grid is not None:
            found[path] = list(param.grid)
        else:
            raise SpecError([f"{source}: tuning.space.{path}.grid: the grid sampler needs the "
                             f"values to visit (a list), got none for a {param.type} parameter"])
    return found


def trial_overrides(values: Mapping[str, Any]) -> list[str]:
    """`path=value` overrides (values as YAML) that apply sampled values to a spec."""
    return [f"{path}={_yaml(value)}" for path, value in values.items()]


def check_space(spec: PipelineSpec, source: str) -> None:
    """`SpecError` naming `tuning.space.<path>` for a path that names no spec field, lies
    under `tuning`, or where a value the space can produce (low, high, each choice and grid
    value) does not validate there."""
    from trainforge.pipeline import plan_pipeline

    assert spec.tuning is not None
    base = spec.model_copy(update={"tuning": None})
    problems: list[str] = []
    for path, param in spec.tuning.space.items():
        where = f"{source}: tuning.space.{path}"
        if path.split(".")[0] == "tuning":
            problems.append(f"{where}: a study cannot search its own settings")
            continue
        for value in _probes(param):
            try:
                plan_pipeline(base, trial_overrides({path: value}))
            except SpecError as exc:
                found = "; ".join(p.partition(": ")[2] for p in exc.problems)
                problems.append(f"{where}: the value {value!r} does not fit the spec: {found}")
                break
    if problems:
        raise SpecError(problems)


def _probes(param: ParamSpec) -> list[Any]:
    if param.type == "choice":
        return [*(param.values or []), *(param.grid or [])]
    ends = [param.low, param.high]
    if param.type == "int":
        ends = [int(v) for v in ends if v is not None]
    return [*ends, *(param.grid or [])]


def _choices(param: ParamSpec) -> tuple[GridValue, ...]:
    return tuple(_plain(v) for v in param.values or [])


def _plain(value: Any) -> GridValue:
    return value if isinstance(value, _PLAIN) else json.dumps(value, sort_keys=True)


def _yaml(value: Any) -> str:
    text: str = yaml.safe_dump(value, default_flow_style=True, width=1 << 30)
    return text.removesuffix("\n...\n").strip()
