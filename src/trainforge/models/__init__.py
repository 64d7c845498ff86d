"""Model builders: built-in architectures (mlp, cnn, transformer) and user models by
`"module:function"`."""

from trainforge.models._builders import (
    BUILTIN_MODELS,
    ModelBuilder,
    build_mlp,
    build_model,
    output_size,
    resolve_builder,
)
from trainforge.models._cnn import build_cnn
from trainforge.models._transformer import build_transformer

__all__ = [
    "BUILTIN_MODELS",
    "ModelBuilder",
    "build_cnn",
    "build_mlp",
    "build_model",
    "build_transformer",
    "output_size",
    "resolve_builder",
]
