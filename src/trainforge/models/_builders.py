"""Model builders: built-in names and user models given as `"package.module:build_fn"`.

A builder is called as `build(in_features=..., out_features=..., **kwargs)` and returns an
`nn.Module` mapping a float tensor of shape (batch, in_features) to (batch, out_features).
Built-ins: `mlp` (takes the spec's `hidden`), `cnn` (`image_shape: [C, H, W]`) and
`transformer` (`sequence_shape: [T, D]`); all take the spec's `dropout`.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Sequence

from torch import nn

from trainforge.config import ModelSpec
from trainforge.errors import TrainingError
from trainforge.models._cnn import build_cnn
from trainforge.models._transformer import build_transformer

ModelBuilder = Callable[..., nn.Module]


def build_mlp(
    in_features: int, out_features: int, hidden: Sequence[int] = (64, 32), dropout: float = 0.0
) -> nn.Module:
    """A feed-forward network: Linear → ReLU (→ Dropout) per hidden layer, then a Linear head."""
    layers: list[nn.Module] = []
    width = in_features
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        if dropout:
            layers.append(nn.Dropout(dropout))
        width = size
    layers.append(nn.Linear(width, out_features))
    return nn.Sequential(*layers)


BUILTIN_MODELS: dict[str, ModelBuilder] = {
    "mlp": build_mlp,
    "cnn": build_cnn,
    "transformer": build_transformer,
}


def output_size(task: str, num_classes: int) -> int:
    """Width of the model's output layer for a task."""
    return num_classes if task == "multiclass" else 1


def build_model(spec: ModelSpec, in_features: int, out_features: int) -> nn.Module:
    """Build the model a spec names."""
    builder = resolve_builder(spec.type)
    kwargs = dict(spec.kwargs)
    if spec.type in BUILTIN_MODELS:
        kwargs = {"dropout": spec.dropout, **kwargs}
    if spec.type == "mlp":
        kwargs = {"hidden": list(spec.hidden), **kwargs}
    try:
        return builder(in_features=in_features, out_features=out_features, **kwargs)
    except TypeError as exc:
        raise TrainingError(f"model.type {spec.type!r}: cannot build with {kwargs}: {exc}") from exc


def resolve_builder(name: str) -> ModelBuilder:
    """A built-in builder by name, or a function imported from `"package.module:function"`."""
    if ":" not in name:
        if name in BUILTIN_MODELS:
            return BUILTIN_MODELS[name]
        hint = difflib.get_close_matches(name, BUILTIN_MODELS, n=1)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        known = ", ".join(sorted(BUILTIN_MODELS))
        raise TrainingError(
            f"model.type {name!r}: expected one of {known} or 'package.module:function'{suggestion}"
        )
    module_name, _, attr = name.partition(":")
    try:
        builder = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise TrainingError(f"model.type {name!r}: cannot import: {exc}") from exc
    if not callable(builder):
        raise TrainingError(f"model.type {name!r}: expected a function, got {type(builder)}")
    return builder
