"""Split: divide rows into train / validation / test, randomly by seed or by time."""

from __future__ import annotations

from trainforge.split._split import Splits, split_frame, split_sizes

__all__ = ["Splits", "split_frame", "split_sizes"]
