"""`transformer`: a small transformer encoder over sequences given as flat feature rows."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from trainforge.errors import TrainingError


class SequenceEncoder(nn.Module):
    """Rows of T*D values as T tokens of D features: a linear embedding plus a learned
    positional embedding, `layers` pre-norm encoder layers, the mean over tokens, a head."""

    def __init__(
        self, sequence_shape: tuple[int, int], out_features: int, d_model: int, heads: int,
        layers: int, feedforward: int, dropout: float,
    ) -> None:
        super().__init__()
        self.sequence_shape = sequence_shape
        length, features = sequence_shape
        self.embed = nn.Linear(features, d_model)
        self.position = nn.Parameter(torch.zeros(1, length, d_model))
        nn.init.normal_(self.position, std=0.02)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, feedforward, dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, out_features)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(rows.view(rows.shape[0], *self.sequence_shape)) + self.position
        return self.head(self.norm(self.encoder(tokens).mean(dim=1)))


def build_transformer(
    in_features: int,
    out_features: int,
    *,
    sequence_shape: Sequence[int],
    d_model: int = 64,
    heads: int = 4,
    layers: int = 2,
    feedforward: int = 128,
    dropout: float = 0.0,
) -> nn.Module:
    """A `SequenceEncoder`; `sequence_shape` [T, D] must hold `in_features` values."""
    shape = tuple(int(v) for v in sequence_shape)
    if len(shape) != 2 or min(shape) < 1 or shape[0] * shape[1] != in_features:
        raise TrainingError(
            f"model.kwargs.sequence_shape: expected [T, D] with T*D = {in_features} "
            f"(the features of a row), got {list(shape)}"
        )
    if d_model % heads:
        raise TrainingError(f"model.kwargs: d_model ({d_model}) must be a multiple of heads "
                            f"({heads})")
    length, features = shape
    return SequenceEncoder((length, features), out_features, d_model, heads, layers, feedforward,
                           dropout)
