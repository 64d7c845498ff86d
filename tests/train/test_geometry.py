"""The batch geometry a job resumed at another world size trains with."""

from __future__ import annotations

import pytest
import torch

from trainforge.errors import TrainingError
from trainforge.train._batches import epoch_order, shard
from trainforge.train._geometry import BatchGeometry, regroup, resume_batch


@pytest.mark.parametrize(("saved", "world", "expected"), [
    (BatchGeometry(8, 1, 4), 2, BatchGeometry(8, 2, 2)),  # lost half: twice the accumulation
    (BatchGeometry(8, 2, 2), 4, BatchGeometry(8, 1, 4)),  # back to four
    (BatchGeometry(16, 1, 2), 4, BatchGeometry(8, 1, 4)),  # more ranks: smaller micro-batches
    (BatchGeometry(16, 1, 2), 1, BatchGeometry(16, 2, 1)),
    (BatchGeometry(6, 1, 4), 3, BatchGeometry(4, 2, 3)),  # 8 rows per rank, at most 6 a batch
    (BatchGeometry(16, 3, 2), 2, BatchGeometry(16, 3, 2)),  # unchanged world: unchanged
])
def test_regroup_keeps_the_global_batch_and_never_grows_a_micro_batch(saved, world, expected):
    got = regroup(saved, world, max_batch_size=saved.batch_size)
    assert got == expected
    assert got.global_batch == saved.global_batch


def test_a_global_batch_that_does_not_split_over_the_ranks_is_refused():
    with pytest.raises(TrainingError, match="the global batch of 32 rows .* does not split "
                                            "evenly over 3 processes"):
        regroup(BatchGeometry(16, 1, 2), 3, max_batch_size=16)


def test_the_resumed_ranks_train_exactly_the_rows_no_rank_trained_before():
    rows, saved, new = 96, BatchGeometry(4, 2, 4), BatchGeometry(4, 4, 2)
    order = epoch_order(rows, 7, 1, True)
    done = 2 * saved.accumulate  # two optimizer steps into the epoch
    before = torch.cat([shard(order, r, saved.world_size)[: done * saved.batch_size]
                        for r in range(saved.world_size)])
    start = resume_batch(saved, done, new)
    after = torch.cat([shard(order, r, new.world_size)[start * new.batch_size:]
                       for r in range(new.world_size)])
    assert sorted(torch.cat([before, after]).tolist()) == list(range(rows))


def test_a_position_between_micro_batches_of_the_new_geometry_is_refused():
    with pytest.raises(TrainingError, match="not a whole number of 16-row micro-batches"):
        resume_batch(BatchGeometry(4, 1, 2), 1, BatchGeometry(8, 1, 2))
