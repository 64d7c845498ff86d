"""Model builders: built-in names and user models given as `"package.module:build_fn"`.

A builder is called as `build(in_features=..., out_features=..., **kwargs)` and returns an
`nn.Module` mapping a float tensor of shape (batch, in_features) to (batch, out_features).
Built-ins: `mlp` (takes the spec's `hidden`), `cnn` (`image_shape: [C, H, W]`) and
`transformer` (`sequence_shape: [T, D]`); all take the spec's `dropout`.

Resolving a built-in name imports nothing: its builder imports its module (and torch) when
first called, so checking a spec (`trainforge validate`) stays fast. A user's
`"package.module:function"` is imported when resolved, since importing it is how it is checked.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainforge.config import ModelSpec
from trainforge.errors import TrainingError

if TYPE_CHECKING:
    from torch import nn

ModelBuilder = Callable[..., "nn.Module"]


def _deferred(module: str, function: str) -> ModelBuilder:
    """The builder `module.function`, imported on its first call."""

    def build(**kwargs: Any) -> nn.Module:
        builder: ModelBuilder = getattr(importlib.import_module(module), function)
        return builder(**kwargs)

    build.__name__ = build.__qualname__ = function
    build.__doc__ = f"`{module}.{function}`, imported when first called."
    return build


BUILTIN_MODELS: dict[str, ModelBuilder] = {
    "mlp": _deferred("trainforge.models._mlp", "build_mlp"),
    "cnn": _deferred("trainforge.models._cnn", "build_cnn"),
    "transformer": _deferred("trainforge.models._transformer", "build_transformer"),
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
