"""Model builders: built-in architectures and user models by `"module:function"`."""

from trainforge.models._builders import (
    BUILTIN_MODELS,
    ModelBuilder,
    build_mlp,
    build_model,
    output_size,
    resolve_builder,
)

__all__ = [
    "BUILTIN_MODELS",
    "ModelBuilder",
    "build_mlp",
    "build_model",
    "output_size",
    "resolve_builder",
]
