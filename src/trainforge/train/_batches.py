"""In-memory mini-batches over tensors, shuffled by a seeded generator per epoch.

Indexing whole tensors avoids the per-sample collate of a DataLoader, which dominates small
tabular models.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TensorBatches:
    features: torch.Tensor
    targets: torch.Tensor
    batch_size: int
    shuffle: bool = False
    seed: int = 0

    def __len__(self) -> int:
        return -(-len(self.features) // self.batch_size)

    @property
    def num_rows(self) -> int:
        return len(self.features)

    def epoch(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The batches of one epoch; the order depends only on (seed, epoch)."""
        if self.shuffle:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            order = torch.randperm(len(self.features), generator=generator)
        else:
            order = None
        for start in range(0, len(self.features), self.batch_size):
            if order is None:
                rows = slice(start, start + self.batch_size)
            else:
                rows = order[start : start + self.batch_size]
            yield self.features[rows], self.targets[rows]
