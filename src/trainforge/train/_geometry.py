"""The batch geometry of a training job, and how it changes when the world size does.

A geometry is (rows per micro-batch and rank, micro-batches per step, ranks). Its global batch,
the rows of one optimizer step, is their product; with the positional sharding of `_batches`
(rank r of W takes positions r, r + W, ... of the epoch's order) the micro-batches 0..b-1 of
every rank together are exactly the first b × batch_size × W positions of the epoch.

So a job that resumes at another world size keeps its trajectory by keeping the global batch
(more accumulation per rank when ranks are lost, less when they come back) and by continuing
at the first position no rank has trained on: each row of the epoch is trained on once, as in
a run that never stopped (up to the padding `DistributedSampler` adds at an epoch's end).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainforge.errors import TrainingError


@dataclass(frozen=True)
class BatchGeometry:
    batch_size: int  # rows per micro-batch and rank
    accumulate: int  # micro-batches per optimizer step
    world_size: int

    @property
    def global_batch(self) -> int:
        """Rows of one optimizer step over all ranks."""
        return self.batch_size * self.accumulate * self.world_size

    def rows_before(self, batch: int) -> int:
        """Positions of the epoch's order trained on once every rank did `batch` micro-batches."""
        return batch * self.batch_size * self.world_size


def regroup(saved: BatchGeometry, world_size: int, max_batch_size: int) -> BatchGeometry:
    """The geometry at `world_size` with `saved`'s global batch: the largest micro-batch of at
    most `max_batch_size` rows (the configured one: memory per rank never grows) whose
    accumulation makes up the rest. `saved` itself when the world size is unchanged.

    `TrainingError` when the global batch does not split evenly over `world_size` ranks.
    """
    if world_size == saved.world_size:
        return saved
    total = saved.global_batch
    if total % world_size:
        raise TrainingError(
            f"resuming at {world_size} processes: the global batch of {total} rows "
            f"({saved.batch_size} rows x {saved.accumulate} micro-batches x "
            f"{saved.world_size} processes when saved) does not split evenly over "
            f"{world_size} processes")
    per_rank = total // world_size
    accumulate = next(a for a in range(1, per_rank + 1)
                      if per_rank % a == 0 and per_rank // a <= max_batch_size)
    return BatchGeometry(per_rank // accumulate, accumulate, world_size)


def resume_batch(saved: BatchGeometry, batch: int, new: BatchGeometry) -> int:
    """The micro-batch of the epoch at geometry `new` that begins where `saved`, after `batch`
    micro-batches, stopped."""
    rows = saved.rows_before(batch)
    per_batch = new.batch_size * new.world_size
    if rows % per_batch:
        raise TrainingError(
            f"resuming at {new.world_size} processes: {rows} rows of the epoch were trained, "
            f"not a whole number of {per_batch}-row micro-batches; resume from a checkpoint "
            "taken at an optimizer step")
    return rows // per_batch
