"""The streaming loader: training batches read from Parquet row groups (local or object
storage), featurised window by window, in memory bounded by the shuffle window and one row
group, whatever the data's size; resumable at any batch without reading what came before.

How an epoch's rows are ordered (a function of seed, epoch, world size and batch size only):
- the row groups holding rows of the part are permuted by a generator seeded with (seed,
  epoch) (kept in file order without shuffle) and grouped, in that order, into windows of at
  least `shuffle_rows` rows of the part; each window's rows are permuted by a generator seeded
  with (seed, epoch, window). Concatenated, the windows give the epoch's row sequence;
- the sequence is cut to a multiple of `world_size` (fewer than `world_size` rows wait for the
  next epoch's order); global batch k is positions [k*B*W, (k+1)*B*W) and rank r takes the
  positions p with p % W == r, as `TensorBatches` shards: together the ranks' batch k is one
  process's batch k at W times the batch size;
- DataLoader worker w of N reads windows w, w+N, ... and yields each window's rows for this
  rank, featurised; the DataLoader takes them round-robin, so the main process sees windows in
  order and cuts them into batches: the batches do not depend on the number of workers.
- resuming at batch b (`epoch(e, start=b)`, or `load_state_dict`) starts at the window holding
  row b*B*W: that window is read, nothing before it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from trainforge.features import FeaturePipeline
from trainforge.streaming._row_groups import RowGroupPlan
from trainforge.streaming._split import TRAIN, StreamSplit
from trainforge.streaming._targets import TargetEncoder
from trainforge.train import Batch

DEFAULT_SHUFFLE_ROWS = 65_536


@dataclass(frozen=True, eq=False)
class StreamingSource:
    """One part of a streamed source, with the fitted features and target encoding applied to
    each window: what the trainer takes in place of in-memory arrays."""

    split: StreamSplit
    pipeline: FeaturePipeline
    target: TargetEncoder
    part: int = TRAIN
    shuffle_rows: int = DEFAULT_SHUFFLE_ROWS

    @property
    def plan(self) -> RowGroupPlan:
        return self.split.plan

    @property
    def rows(self) -> int:
        return int(self.split.counts[:, self.part].sum())

    @cached_property
    def columns(self) -> list[str]:
        """The columns read: the features' inputs, the target and what the split needs."""
        inputs = [c for t in self.pipeline.transforms for c in t.columns]
        wanted = [*inputs, *self.pipeline.passthrough, self.target.column, *self.split.columns]
        return list(dict.fromkeys(wanted))

    def make_batches(self, batch_size: int, device: torch.device, *, shuffle: bool,
                     seed: int = 0, rank: int = 0, world_size: int = 1,
                     num_workers: int = 0) -> StreamingBatches:
        return StreamingBatches(self, _Layout(self, batch_size, shuffle, seed, world_size),
                                device, rank, num_workers)


@dataclass(frozen=True)
class _Window:
    groups: tuple[int, ...]
    start: int  # position of its first row in the epoch's sequence
    rows: int


@dataclass(frozen=True, eq=False)
class _Layout:
    """The order of an epoch's rows (module docstring), shared by every rank and worker."""

    source: StreamingSource
    batch_size: int
    shuffle: bool
    seed: int
    world_size: int

    @property
    def rows_per_epoch(self) -> int:
        total = self.source.rows
        return total - total % self.world_size

    @property
    def batches(self) -> int:
        """Batches per epoch on each rank."""
        return -(-(self.rows_per_epoch // self.world_size) // self.batch_size)

    def windows(self, epoch: int) -> list[_Window]:
        counts = self.source.split.counts[:, self.source.part]
        order = np.flatnonzero(counts)
        if self.shuffle:
            order = np.random.default_rng([self.seed, epoch]).permutation(order)
        windows: list[_Window] = []
        groups: list[int] = []
        start = rows = 0
        for group in order.tolist():
            groups.append(group)
            rows += int(counts[group])
            if rows >= self.source.shuffle_rows:
                windows.append(_Window(tuple(groups), start, rows))
                start, groups, rows = start + rows, [], 0
        if groups:
            windows.append(_Window(tuple(groups), start, rows))
        return windows

    def window_order(self, epoch: int, index: int, rows: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(rows)
        return np.random.default_rng([self.seed, epoch, index]).permutation(rows)


class _WindowRows(IterableDataset):
    """One rank's featurised rows of the windows from position `begin` on: this DataLoader
    worker's windows only."""

    def __init__(self, layout: _Layout, epoch: int, begin: int, rank: int) -> None:
        self.layout, self.epoch, self.begin, self.rank = layout, epoch, begin, rank

    def __iter__(self) -> Iterator[Batch]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        windows = self.layout.windows(self.epoch)
        first = bisect.bisect_right([w.start for w in windows], self.begin) - 1
        for index in range(max(first, 0) + worker, len(windows), workers):
            yield self._rows(index, windows[index])

    def _rows(self, index: int, window: _Window) -> Batch:
        layout, source = self.layout, self.layout.source
        frame, places = _read_window(source, window.groups)
        order = layout.window_order(self.epoch, index, window.rows)
        positions = window.start + np.arange(window.rows)
        keep = ((positions >= self.begin) & (positions < layout.rows_per_epoch)
                & (positions % layout.world_size == self.rank))
        picked = order[keep]
        part = frame.iloc[picked]
        features = source.pipeline.transform(part, lambda row: places(int(picked[row])))
        targets = source.target.encode(part[source.target.column], lambda row: places(
            int(picked[row])))
        # row-major whatever layout the frame had: kernels round differently by layout
        return torch.from_numpy(np.ascontiguousarray(features)), torch.from_numpy(targets)


def _read_window(source: StreamingSource, groups: Sequence[int]) -> tuple[pd.DataFrame, Any]:
    """The part's rows of `groups`, in order, and where row i of them lies in its file."""
    tables, owners, offsets = [], [], []
    for group in groups:
        table = source.plan.read(group, source.columns)
        mask = source.split.parts(group, table) == source.part
        kept = np.flatnonzero(mask)
        tables.append(table.filter(pa.array(mask)))
        owners.append(np.full(len(kept), group))
        offsets.append(kept)
    owner, offset = np.concatenate(owners), np.concatenate(offsets)
    frame = pa.concat_tables(tables).to_pandas()

    def place(row: int) -> str:
        return source.plan.groups[int(owner[row])].locate(int(offset[row]))

    return frame, place


class StreamingBatches:
    """The `Batches` of a `StreamingSource` on one rank (module docstring); `state_dict` /
    `load_state_dict` name the next batch, so iteration resumes there."""

    def __init__(self, source: StreamingSource, layout: _Layout, device: torch.device,
                 rank: int, num_workers: int) -> None:
        self.source, self.layout, self.device = source, layout, device
        self.rank, self.num_workers = rank, num_workers
        self._next = (0, 0)  # (epoch, batch) of the next batch

    def __len__(self) -> int:
        return self.layout.batches

    def state_dict(self) -> dict[str, int]:
        epoch, batch = self._next
        return {"epoch": epoch, "batch": batch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self._next = (int(state["epoch"]), int(state["batch"]))

    def __iter__(self) -> Iterator[Batch]:
        """The rest of the current epoch, from the batch `state_dict` names."""
        epoch, batch = self._next
        return self.epoch(epoch, start=batch)

    def epoch(self, epoch: int, start: int = 0) -> Iterator[Batch]:
        """The batches of `epoch` from batch `start` on, on the device."""
        size, layout = self.layout.batch_size, self.layout
        rows = _WindowRows(layout, epoch, start * size * layout.world_size, self.rank)
        if self.num_workers:
            parts: Any = DataLoader(
                rows, batch_size=None, num_workers=self.num_workers,
                pin_memory=self.device.type == "cuda",
                generator=torch.Generator().manual_seed(layout.seed),  # not the global one
            )
        else:
            parts = rows
        batch = start
        pending: Batch | None = None
        for features, targets in parts:
            if pending is not None:
                features = torch.cat([pending[0], features])
                targets = torch.cat([pending[1], targets])
            full = len(features) // size * size
            for first in range(0, full, size):
                yield self._emit(epoch, batch, features[first:first + size],
                                 targets[first:first + size])
                batch += 1
            pending = features[full:], targets[full:]
        if pending is not None and len(pending[0]):
            yield self._emit(epoch, batch, *pending)
        self._next = (epoch + 1, 0)

    def _emit(self, epoch: int, batch: int, features: torch.Tensor,
              targets: torch.Tensor) -> Batch:
        self._next = (epoch, batch + 1)
        # Row-major copies, never views into a window: a view's offset changes with where
        # iteration started, and CPU kernels round differently by alignment and layout.
        features = features.contiguous()
        return (features.to(self.device, non_blocking=True, copy=True),
                targets.to(self.device, self.source.target.dtype, non_blocking=True, copy=True))
