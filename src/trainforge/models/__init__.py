"""Model builders: built-in architectures (mlp, cnn, transformer) and user models by
`"module:function"`.

Names are imported on first use (`trainforge._lazy`): resolving a builder name imports no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.models._builders import (
        BUILTIN_MODELS,
        ModelBuilder,
        build_model,
        output_size,
        resolve_builder,
    )
    from trainforge.models._cnn import build_cnn
    from trainforge.models._mlp import build_mlp
    from trainforge.models._transformer import build_transformer

_EXPORTS = {
    "BUILTIN_MODELS": "trainforge.models._builders",
    "ModelBuilder": "trainforge.models._builders",
    "build_cnn": "trainforge.models._cnn",
    "build_mlp": "trainforge.models._mlp",
    "build_model": "trainforge.models._builders",
    "build_transformer": "trainforge.models._transformer",
    "output_size": "trainforge.models._builders",
    "resolve_builder": "trainforge.models._builders",
}

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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
