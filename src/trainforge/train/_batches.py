"""Mini-batches for the trainer: in-memory tensors (the fast path) or a torch `Dataset`.

Rules every batch source keeps:
- the order of an epoch depends only on (seed, epoch): a permutation drawn from a generator
  seeded with `seed * SEED_STRIDE + epoch`, the order `DistributedSampler(seed=seed *
  SEED_STRIDE)` gives, so arrays and Datasets see their rows in the same order;
- with `world_size` processes the permutation is padded (repeating its head) to a multiple of
  `world_size` and rank r takes positions r, r + world_size, ...; batch k of all ranks together
  then holds exactly the rows of batch k of one process whose batch is `world_size` times larger;
- every rank has the same number of batches, so collective operations never wait on a rank
  that ran out of data;
- `epoch(e, start=b)` begins at batch b without touching the batches before it, so a resumed
  run sees the batches it would have seen;
- batching never draws from the global random generators: in the main process they hold only
  what the model and the dataset draw, and a checkpoint of them resumes exactly. In DataLoader
  worker processes each item is fetched with torch, NumPy and `random` seeded from (seed,
  epoch, index), so a Dataset's random augmentation is the same wherever a run resumes, with
  any number of workers.

Indexing whole tensors avoids the per-sample collate of a DataLoader, which dominates small
tabular models; a `Dataset` goes through a DataLoader (with `num_workers`) instead.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, get_worker_info

from trainforge.errors import TrainingError

SEED_STRIDE = 1_000_003
Batch = tuple[torch.Tensor, torch.Tensor]
ArrayPair = tuple[Union[np.ndarray, torch.Tensor], Union[np.ndarray, torch.Tensor]]


class Batches(Protocol):
    """A source of (features, targets) batches on the training device."""

    def __len__(self) -> int:
        """Batches per epoch on this rank."""

    def epoch(self, epoch: int, start: int = 0) -> Iterator[Batch]:
        """The batches of `epoch` from batch index `start` on."""


@runtime_checkable
class BatchSource(Protocol):
    """Data that makes its own `Batches`, keeping this module's rules (the streaming loader,
    `trainforge.streaming.StreamingSource`)."""

    def make_batches(self, batch_size: int, device: torch.device, *, shuffle: bool,
                     seed: int = 0, rank: int = 0, world_size: int = 1,
                     num_workers: int = 0) -> Batches:
        """This rank's batches."""


TrainData = Union[ArrayPair, Dataset, BatchSource]


def epoch_order(rows: int, seed: int, epoch: int, shuffle: bool) -> torch.Tensor:
    """Row positions of one epoch: a seeded permutation, or 0..rows-1 unshuffled."""
    if not shuffle:
        return torch.arange(rows)
    generator = torch.Generator().manual_seed(seed * SEED_STRIDE + epoch)
    return torch.randperm(rows, generator=generator)


def shard(order: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """This rank's share of `order`, padded as `DistributedSampler` pads (drop_last=False)."""
    if world_size == 1:
        return order
    total = -(-len(order) // world_size) * world_size
    padding = total - len(order)
    if padding:
        repeats = -(-padding // len(order))
        order = torch.cat([order, order.repeat(repeats)[:padding]])
    return order[rank:total:world_size]


@dataclass(frozen=True)
class TensorBatches:
    """Batches sliced from tensors already on the training device."""

    features: torch.Tensor
    targets: torch.Tensor
    batch_size: int
    shuffle: bool = False
    seed: int = 0
    rank: int = 0
    world_size: int = 1

    def __len__(self) -> int:
        return -(-self.rows_per_rank // self.batch_size)

    @property
    def num_rows(self) -> int:
        return len(self.features)

    @property
    def rows_per_rank(self) -> int:
        return -(-len(self.features) // self.world_size)

    def epoch(self, epoch: int, start: int = 0) -> Iterator[Batch]:
        """The batches of one epoch from batch `start` on; the order depends on (seed, epoch)."""
        size = self.batch_size
        if not self.shuffle and self.world_size == 1:
            for first in range(start * size, len(self.features), size):
                yield self.features[first : first + size], self.targets[first : first + size]
            return
        order = epoch_order(len(self.features), self.seed, epoch, self.shuffle)
        rows = shard(order, self.rank, self.world_size).to(self.features.device)
        for first in range(start * size, len(rows), size):
            picked = rows[first : first + size]
            yield self.features[picked], self.targets[picked]


class _PositionedSampler(DistributedSampler):
    """`DistributedSampler` that yields (epoch, index) keys and can begin `skip` keys into its
    epoch."""

    skip = 0

    def __iter__(self) -> Iterator[Any]:
        epoch = self.epoch
        return ((epoch, index) for index in itertools.islice(super().__iter__(), self.skip, None))


class _SeededItems(Dataset):
    """`dataset[index]` for the key (epoch, index); inside a DataLoader worker, the random
    generators are first seeded from (seed, epoch, index)."""

    def __init__(self, dataset: Dataset, seed: int) -> None:
        self.dataset = dataset
        self.seed = seed

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitem__(self, key: tuple[int, int]) -> Any:
        epoch, index = key
        if get_worker_info() is not None:
            item_seed = ((self.seed * SEED_STRIDE + epoch) << 32 | index) & 0x7FFF_FFFF_FFFF_FFFF
            torch.manual_seed(item_seed)
            random.seed(item_seed)
            np.random.seed(item_seed & 0xFFFF_FFFF)
        return self.dataset[index]


class LoaderBatches:
    """Batches of a torch `Dataset` of (features, target) items, through a DataLoader."""

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        target_dtype: torch.dtype,
        device: torch.device,
        *,
        shuffle: bool,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        num_workers: int = 0,
    ) -> None:
        self.batch_size = batch_size
        self.target_dtype = target_dtype
        self.device = device
        self.sampler = _PositionedSampler(
            dataset, world_size, rank, shuffle=shuffle, seed=seed * SEED_STRIDE
        )
        self.loader = DataLoader(
            _SeededItems(dataset, seed), batch_size, sampler=self.sampler,
            num_workers=num_workers, pin_memory=device.type == "cuda",
            persistent_workers=num_workers > 0,
            generator=torch.Generator().manual_seed(seed),  # not the global generator
        )

    def __len__(self) -> int:
        return len(self.loader)

    def epoch(self, epoch: int, start: int = 0) -> Iterator[Batch]:
        """The batches of one epoch from batch `start` on, moved to the device."""
        self.sampler.set_epoch(epoch)
        self.sampler.skip = start * self.batch_size
        for features, targets in self.loader:
            yield (
                features.to(self.device, torch.float32, non_blocking=True),
                targets.to(self.device, self.target_dtype, non_blocking=True),
            )


def row_count(data: TrainData | None) -> int | None:
    """The rows of (features, targets) arrays or of a Dataset, whose batches `make_batches`
    shards by rank as `shard` does; None for a BatchSource (its own rules) or no data."""
    if isinstance(data, BatchSource):
        return None
    if isinstance(data, Dataset):
        return len(data)  # type: ignore[arg-type]
    if isinstance(data, (tuple, list)) and len(data) == 2:
        return len(data[0])
    return None  # no data, or data `make_batches` refuses with its own message


def target_dtype(task: str) -> torch.dtype:
    """Class ids for multiclass, floats for binary and regression."""
    return torch.int64 if task == "multiclass" else torch.float32


def make_batches(
    data: TrainData,
    task: str,
    batch_size: int,
    device: torch.device,
    *,
    shuffle: bool,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
    num_workers: int = 0,
) -> Batches:
    """`TensorBatches` for a (features, targets) pair of arrays, `LoaderBatches` for a Dataset,
    a `BatchSource`'s own batches."""
    if isinstance(data, BatchSource):
        return data.make_batches(batch_size, device, shuffle=shuffle, seed=seed, rank=rank,
                                 world_size=world_size, num_workers=num_workers)
    if isinstance(data, Dataset):
        return LoaderBatches(
            data, batch_size, target_dtype(task), device, shuffle=shuffle, seed=seed,
            rank=rank, world_size=world_size, num_workers=num_workers,
        )
    if not (isinstance(data, (tuple, list)) and len(data) == 2):
        raise TrainingError(
            f"training data: expected (features, targets) arrays or a torch Dataset, "
            f"got {type(data).__name__}"
        )
    features = torch.as_tensor(np.asarray(data[0], dtype=np.float32))
    targets = torch.as_tensor(np.asarray(data[1])).to(target_dtype(task))
    if len(features) != len(targets) or len(features) == 0:
        raise TrainingError(
            f"training data: {len(features)} feature rows and {len(targets)} targets; "
            "expected the same number, at least one"
        )
    return TensorBatches(
        features.to(device), targets.to(device), batch_size, shuffle, seed, rank, world_size
    )


def windows(batches: Iterable[Batch], size: int) -> Iterator[tuple[Batch, ...]]:
    """Consecutive groups of `size` batches (the last group may be shorter)."""
    if size == 1:  # the common case, without islice's cost per step
        for batch in batches:
            yield (batch,)
        return
    iterator = iter(batches)
    while window := tuple(itertools.islice(iterator, size)):
        yield window
