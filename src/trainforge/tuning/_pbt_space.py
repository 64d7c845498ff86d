"""The hyperparameters of a PBT member: which spec paths may change mid-training, drawing and
perturbing their values (pure, over a seeded `random.Random`), and putting them into a loaded
trainer state.

A path can change mid-training when the trainer's state carries it as a value that can be
rewritten (the optimizer's per-group settings, and the schedule's base learning rate), or when
the trainer builds it afresh from the member's spec each interval without it shaping any saved
tensor (clipping, the loss's positive weight). Paths that shape the model or the data order
cannot: `model.hidden`, `training.batch_size`, and `model.dropout` too (the mlp has dropout
layers only when it is above 0, so their positions shift the saved weights' names).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from trainforge.config import KEEP_CREDENTIALS, ParamSpec, PbtSpec, PipelineSpec, parse_model

OPTIMIZER_PATHS = {
    "training.optimizer.lr": "lr",
    "training.optimizer.weight_decay": "weight_decay",
    "training.optimizer.eps": "eps",
    "training.optimizer.momentum": "momentum",
}
REBUILT_PATHS = ("training.clip.max", "training.pos_weight")
MUTABLE_PATHS = (*OPTIMIZER_PATHS, *REBUILT_PATHS)

Values = dict[str, Any]


def immutable_paths(space: Mapping[str, ParamSpec]) -> list[str]:
    """The paths of `space` a member cannot change mid-training, in the space's order."""
    return [path for path in space if path not in MUTABLE_PATHS]


def sample(param: ParamSpec, rng: random.Random) -> Any:
    """A value drawn from `param`'s range (uniform, on a log scale for `loguniform` and
    `log: true`; a uniform's `step` rounds to its grid from `low`)."""
    if param.type == "choice":
        assert param.values is not None  # the spec requires values for a choice
        return rng.choice(param.values)
    assert param.low is not None and param.high is not None
    if param.type == "loguniform" or param.log:
        value = math.exp(rng.uniform(math.log(param.low), math.log(param.high)))
    else:
        value = rng.uniform(param.low, param.high)
    return _fit(value, param)


def perturb(value: Any, param: ParamSpec, factor: float, rng: random.Random) -> Any:
    """`value` times `factor`, kept in the range; a choice moves to a neighbouring value."""
    if param.type == "choice":
        assert param.values is not None
        index = param.values.index(value) if value in param.values else 0
        moved = min(len(param.values) - 1, max(0, index + rng.choice((-1, 1))))
        return param.values[moved]
    return _fit(float(value) * factor, param)


def explore(values: Mapping[str, Any], space: Mapping[str, ParamSpec], pbt: PbtSpec,
            rng: random.Random) -> Values:
    """New values from a donor's `values`: each path is drawn anew with
    `resample_probability`, else perturbed by one of `perturb_factors`, picked at random."""
    explored = {}
    for path, param in space.items():
        if rng.random() < pbt.resample_probability:
            explored[path] = sample(param, rng)
        else:
            explored[path] = perturb(values[path], param, rng.choice(pbt.perturb_factors), rng)
    return explored


def initial_values(space: Mapping[str, ParamSpec], rng: random.Random) -> Values:
    """A member's first values: each path drawn from its range."""
    return {path: sample(param, rng) for path, param in space.items()}


def with_values(state: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """A trainer state (`Trainer.state_dict()` layout) whose optimizer groups hold `values`
    (the learning rate as the schedule's base too, so the schedule's factor applies to it).
    Values of paths the trainer rebuilds from the spec leave the state as it is."""
    optimizer = dict(state["optimizer"])
    groups = [dict(group) for group in optimizer["param_groups"]]
    scheduler = dict(state["scheduler"])
    for path, key in OPTIMIZER_PATHS.items():
        if path in values:
            for group in groups:
                group[key] = values[path]
            if key == "lr":
                scheduler["base_lrs"] = [float(values[path])] * len(groups)
    optimizer["param_groups"] = groups
    return {**state, "optimizer": optimizer, "scheduler": scheduler}


def spec_with(spec: PipelineSpec, values: Mapping[str, Any], source: str) -> PipelineSpec:
    """`spec` with each dotted path of `values` set (a missing section is created, such as
    `training.clip`); `SpecError` names the path whose value the spec refuses."""
    data = spec.model_dump(context={KEEP_CREDENTIALS: True})
    for path, value in values.items():
        *parents, leaf = path.split(".")
        node = data
        for part in parents:
            node[part] = dict(node.get(part) or {})
            node = node[part]
        node[leaf] = value
    return parse_model(PipelineSpec, data, source)


def _fit(value: float, param: ParamSpec) -> float | int:
    """`value` on `param`'s grid and within [low, high]."""
    assert param.low is not None and param.high is not None
    if param.step is not None:
        value = param.low + round((value - param.low) / param.step) * param.step
    value = min(param.high, max(param.low, value))
    return int(round(value)) if param.type == "int" else value
