"""`mlp`: a feed-forward network over feature rows."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn


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
