"""Exact resume from `Trainer.state_dict()`, and the batch order it relies on."""

import copy

import pytest
import torch
from torch.utils.data import DistributedSampler, TensorDataset
from train_helpers import Recorder, blobs, make_trainer, model_for

from trainforge.errors import TrainingError
from trainforge.train import Callback, TensorBatches, make_batches
from trainforge.train._batches import SEED_STRIDE

SETUP = dict(epochs=3, batch_size=16, accumulate_grad_batches=2, log_every_n_steps=3,
             optimizer={"lr": 0.01}, schedule={"name": "cosine", "warmup_steps": 4},
             early_stopping={"metric": "val_loss", "patience": 5})


class SnapshotAt(Callback):
    """A deep copy of the trainer's state at one global step (step end) or epoch end."""

    def __init__(self, step: int | None = None, epoch: int | None = None) -> None:
        self.step, self.epoch, self.state = step, epoch, None

    def on_step_end(self, trainer):
        if trainer.state.global_step == self.step:
            self.state = copy.deepcopy(trainer.state_dict())

    def on_epoch_end(self, trainer):
        if trainer.state.epoch == self.epoch:
            self.state = copy.deepcopy(trainer.state_dict())


def dropout_model():
    return model_for("binary", hidden=(32, 16), dropout=0.3)


@pytest.mark.parametrize("snapshot", [SnapshotAt(step=13), SnapshotAt(epoch=1)],
                         ids=["mid-epoch", "epoch-end"])
def test_resuming_from_a_state_dict_continues_bit_for_bit(snapshot):
    full = Recorder()
    whole = make_trainer(model=dropout_model(), recorder=full, callbacks=[snapshot], **SETUP)
    whole_result = whole.fit()
    torch.manual_seed(1234)  # the resumed process starts from other random state
    resumed_log = Recorder()
    resumed = make_trainer(model=model_for("binary", hidden=(32, 16), dropout=0.3, seed=99),
                           recorder=resumed_log, **SETUP)
    resumed.load_state_dict(snapshot.state)
    result = resumed.fit()
    from_step = snapshot.state["trainer"]["global_step"]
    assert untimed(resumed_log.points) == untimed(p for p in full.points if p[2] > from_step)
    for ours, theirs in zip(result.model.parameters(), whole_result.model.parameters()):
        assert torch.equal(ours, theirs)
    assert result.history == whole_result.history
    assert resumed.state_dict()["trainer"]["early_stopping"] == whole.early_stopping.state_dict()


def untimed(points) -> list[tuple[str, str, int]]:
    """Metric points without the wall-clock ones, values bit-exact (as hex)."""
    return [(k, v.hex(), s) for k, v, s in points if k not in ("samples_per_s", "step_time_s")]


def test_state_dict_has_the_checkpoint_layout():
    trainer = make_trainer(epochs=1)
    trainer.fit()
    state = trainer.state_dict()
    assert set(state) == {"model", "optimizer", "scheduler", "scaler", "rng", "data", "trainer"}
    assert state["data"] == {"epoch": 1, "batch": 0, "seed": 0, "batch_size": 32,
                             "accumulate": 1, "world_size": 1}
    assert state["trainer"]["global_step"] == 10 and "best_metric" in state["trainer"]
    assert {"python", "numpy", "torch"} <= set(state["rng"])


def test_a_state_of_another_seed_is_refused():
    state = make_trainer(epochs=1).state_dict()
    with pytest.raises(TrainingError, match="saved with training.seed 0, this trainer has 5"):
        make_trainer(seed=5).load_state_dict(state)


def test_a_state_missing_parts_is_refused():
    with pytest.raises(TrainingError, match="missing scheduler, scaler"):
        make_trainer().load_state_dict({"model": {}, "optimizer": {}, "rng": {}, "data": {},
                                        "trainer": {}})


def test_starting_at_a_batch_skips_exactly_the_batches_before_it():
    (x, y), _ = blobs("binary")
    batches = TensorBatches(torch.from_numpy(x), torch.from_numpy(y), 32, shuffle=True, seed=3)
    everything = list(batches.epoch(2))
    tail = list(batches.epoch(2, start=4))
    assert len(tail) == len(everything) - 4
    for (a, b), (c, d) in zip(tail, everything[4:]):
        assert torch.equal(a, c) and torch.equal(b, d)


@pytest.mark.parametrize("world_size", [1, 3])
def test_arrays_and_datasets_share_the_distributed_sampler_order(world_size):
    (x, y), _ = blobs("binary", n=202)  # 101 rows: ranks need padding
    features, targets = torch.from_numpy(x), torch.from_numpy(y)
    dataset = TensorDataset(features, targets)
    cpu = torch.device("cpu")
    for rank in range(world_size):
        arrays = make_batches((x, y), "binary", 8, cpu, shuffle=True, seed=2, rank=rank,
                              world_size=world_size)
        loaded = make_batches(dataset, "binary", 8, cpu, shuffle=True, seed=2, rank=rank,
                              world_size=world_size)
        assert len(arrays) == len(loaded)
        for (a, b), (c, d) in zip(arrays.epoch(1, start=1), loaded.epoch(1, start=1)):
            assert torch.equal(a, c) and torch.equal(b, d)
        sampler = DistributedSampler(dataset, world_size, rank, seed=2 * SEED_STRIDE)
        sampler.set_epoch(1)
        first = next(iter(arrays.epoch(1)))[0]
        assert torch.equal(first, features[list(sampler)[:8]])


def test_ranks_together_cover_each_global_batch_of_one_process():
    (x, y), _ = blobs("binary", n=128)  # 64 rows
    features = torch.from_numpy(x)
    one = TensorBatches(features, torch.from_numpy(y), 16, shuffle=True, seed=1)
    ranks = [TensorBatches(features, torch.from_numpy(y), 8, shuffle=True, seed=1, rank=r,
                           world_size=2) for r in range(2)]
    for step, (whole, _) in enumerate(one.epoch(0)):
        parts = [list(r.epoch(0))[step][0] for r in ranks]
        rows = lambda t: sorted(map(tuple, t.tolist()))  # noqa: E731
        assert rows(torch.cat(parts)) == rows(whole)
