"""The Trainer's checkpointing: saves on the policy, resume, preemption, and run records."""

from __future__ import annotations

import math
import os
import signal

import pytest
import torch
from torch.utils.data import Dataset
from train_helpers import Recorder, make_trainer, model_for

from trainforge.entities import RunStatus
from trainforge.errors import Preempted
from trainforge.tracking import start_run
from trainforge.train import Callback, PreemptionNotice, make_batches
from trainforge.train.checkpoint import CheckpointInfo, CheckpointManager

# blobs("binary"): 300 training rows; batch 32 → 10 steps per epoch
SETUP = dict(epochs=3, batch_size=32, log_every_n_steps=1, optimizer={"lr": 0.01},
             schedule={"name": "cosine", "warmup_steps": 3}, deterministic=True)


class RaiseAt(Callback):
    """Raises `error` after global step `step` (a crash, or a signal arriving)."""

    def __init__(self, step: int, error: BaseException | None = None, signum: int = 0) -> None:
        self.step, self.error, self.signum = step, error, signum

    def on_step_end(self, trainer):
        if trainer.state.global_step == self.step:
            if self.signum:
                os.kill(os.getpid(), self.signum)
            else:
                raise self.error


def steps_saved(location) -> list[int]:
    return [info.step for info in CheckpointManager(location).list()]


def dropout_model(seed: int = 0):
    return model_for("binary", hidden=(32, 16), dropout=0.3, seed=seed)


def test_saves_on_every_n_steps_and_at_epoch_ends_once_per_step(tmp_path):
    trainer = make_trainer(checkpoint_dir=tmp_path, **SETUP,
                           checkpoint={"every_n_steps": 4, "keep_last": None})
    result = trainer.fit()
    assert steps_saved(tmp_path) == [4, 8, 10, 12, 16, 20, 24, 28, 30]
    infos = {info.step: info for info in CheckpointManager(tmp_path).list()}
    # an epoch's last step is saved after its validation, with the epoch's metrics
    assert infos[10].metrics["val_loss"] == result.history[0]["val_loss"]
    assert infos[10].epoch == 1 and infos[12].epoch == 1 and infos[30].epoch == 3
    # a checkpoint holds the metrics logged at its step: no stale validation mid-epoch
    assert "val_loss" not in infos[12].metrics and "train_loss" in infos[12].metrics


def test_without_a_location_nothing_is_saved(tmp_path):
    trainer = make_trainer(**SETUP)
    trainer.fit()
    assert trainer.checkpointing.manager is None


def test_retention_keeps_the_last_and_the_best_validated_one(tmp_path):
    result = make_trainer(checkpoint_dir=tmp_path,
                          **{**SETUP, "epochs": 4, "optimizer": {"lr": 0.3}},
                          checkpoint={"every_n_steps": 3, "keep_last": 1, "keep_best": 1,
                                      "monitor": "val_loss"}).fit()
    losses = [epoch["val_loss"] for epoch in result.history]
    best_epoch = losses.index(min(losses))
    assert best_epoch < 3  # the best is not also the newest
    steps = [info.step for info in CheckpointManager(tmp_path).list()]
    assert steps == [(best_epoch + 1) * 10, 40]  # ranked only where val_loss was measured


@pytest.mark.parametrize("crash_step", [13, 20, 21],
                         ids=["mid-epoch", "epoch-last-step", "after-epoch-end"])
def test_a_crashed_fit_resumes_from_its_newest_checkpoint_bit_for_bit(tmp_path, crash_step):
    policy = {"every_n_steps": 4}
    whole_log = Recorder()
    whole = make_trainer(model=dropout_model(), recorder=whole_log, **SETUP).fit()
    crashed_log = Recorder()
    with pytest.raises(RuntimeError, match="power cut"):
        make_trainer(model=dropout_model(), recorder=crashed_log, checkpoint_dir=tmp_path,
                     callbacks=[RaiseAt(crash_step, RuntimeError("power cut"))], **SETUP,
                     checkpoint=policy).fit()
    torch.manual_seed(99)  # the new process starts from other random state
    resumed_log = Recorder()
    resumed_trainer = make_trainer(model=dropout_model(seed=5), recorder=resumed_log,
                                   checkpoint_dir=tmp_path, resume=True, **SETUP,
                                   checkpoint=policy)
    resumed = resumed_trainer.fit()
    saved = resumed_trainer.checkpointing.resumed_from.step
    # an epoch's last step is saved after its validation: a crash before it resumes earlier
    assert saved == {13: 12, 20: 16, 21: 20}[crash_step]
    points = [p for p in crashed_log.points if p[2] <= saved] + resumed_log.points
    assert hexed(points) == hexed(whole_log.points)
    for ours, theirs in zip(resumed.model.parameters(), whole.model.parameters()):
        assert torch.equal(ours, theirs)


def hexed(points) -> list[tuple[str, str, int]]:
    return [(k, v.hex(), s) for k, v, s in points if k not in ("samples_per_s", "step_time_s")]


def test_resume_without_a_checkpoint_starts_from_the_beginning(tmp_path):
    log = Recorder()
    trainer = make_trainer(checkpoint_dir=tmp_path / "empty", resume=True, recorder=log, **SETUP)
    trainer.fit()
    assert trainer.checkpointing.resumed_from is None
    assert log.series("train_loss")[0][0] == 1


def test_a_preemption_signal_saves_at_the_next_step_and_stops(tmp_path):
    previous = signal.getsignal(signal.SIGUSR1)
    notice = PreemptionNotice(["SIGUSR1"])
    trainer = make_trainer(model=dropout_model(), checkpoint_dir=tmp_path,
                           callbacks=[RaiseAt(7, signum=signal.SIGUSR1)], **SETUP,
                           checkpoint={"every_n_steps": 5}, preemption=notice)
    assert signal.getsignal(signal.SIGUSR1) is previous  # building a trainer installs nothing
    with notice.installed(), pytest.raises(Preempted) as info:  # this test is the entry point
        trainer.fit()
    assert (info.value.signal, info.value.step) == ("SIGUSR1", 7)
    assert str(info.value) == "preempted by SIGUSR1 after step 7 (checkpoint saved)"
    assert steps_saved(tmp_path) == [5, 7]
    assert signal.getsignal(signal.SIGUSR1) is previous  # the handler is removed again

    resumed = make_trainer(model=dropout_model(seed=3), checkpoint_dir=tmp_path, resume=True,
                           **SETUP, checkpoint={"every_n_steps": 5}).fit()
    whole = make_trainer(model=dropout_model(), **SETUP).fit()
    for ours, theirs in zip(resumed.model.parameters(), whole.model.parameters()):
        assert torch.equal(ours, theirs)


def test_a_preemption_without_a_location_stops_without_a_checkpoint():
    notice = PreemptionNotice(["SIGUSR1"])
    trainer = make_trainer(callbacks=[RaiseAt(3, signum=signal.SIGUSR1)], **SETUP,
                           preemption=notice)
    with notice.installed(), pytest.raises(Preempted) as info:
        trainer.fit()
    assert info.value.step is None and str(info.value) == "preempted by SIGUSR1"


def test_a_signal_outside_training_gets_its_previous_handling():
    seen = []
    previous = signal.signal(signal.SIGUSR1, lambda number, frame: seen.append(number))
    try:
        notice = PreemptionNotice(["SIGUSR1"])
        with notice.installed():
            os.kill(os.getpid(), signal.SIGUSR1)  # installed, not armed: no trainer fits
            assert seen == [signal.SIGUSR1] and notice.requested is None
            notice.arm()
            os.kill(os.getpid(), signal.SIGUSR1)
            assert seen == [signal.SIGUSR1] and notice.requested == "SIGUSR1"
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_tracked_run_records_checkpoints_and_drops_points_a_resume_logs_again(
        tmp_path, store):
    policy = {"every_n_steps": 4, "keep_last": 2}
    location = tmp_path / "checkpoints"
    with start_run("resume", store=store, artifacts=tmp_path / "artifacts",
                   code_dir=tmp_path) as run:
        with pytest.raises(RuntimeError):
            make_trainer(recorder=run, checkpoint_dir=location, **SETUP, checkpoint=policy,
                         callbacks=[RaiseAt(14, RuntimeError("crash"))]).fit()
        run.flush()
        assert max(p.step for p in store.get_metric_history(run.run_id, "train_loss").items) == 14
        records = store.list_checkpoints(run.run_id, include_deleted=True).items
        assert [(r.step, r.deleted) for r in records] == [
            (4, True), (8, True), (10, False), (12, False)]
        assert records[2].metrics["val_loss"] > 0 and records[2].epoch == 1

        make_trainer(recorder=run, checkpoint_dir=location, resume=True, **SETUP,
                     checkpoint=policy).fit()
    losses = store.get_metric_history(run.run_id, "train_loss").items
    assert [p.step for p in losses] == list(range(1, 31))
    assert store.get_run(run.run_id).status is RunStatus.COMPLETED
    assert [r.step for r in store.list_checkpoints(run.run_id).items] == [28, 30]


def test_a_checkpoint_resumed_from_without_a_record_is_recorded_and_its_deletion_too(
        tmp_path, store, caplog):
    policy = {"every_n_steps": 4, "keep_last": 2}
    location = tmp_path / "checkpoints"
    with pytest.raises(RuntimeError):  # saved, never recorded: as a save killed before it
        make_trainer(checkpoint_dir=location, **SETUP, checkpoint=policy,
                     callbacks=[RaiseAt(14, RuntimeError("crash"))]).fit()
    with start_run("resume", store=store, artifacts=tmp_path / "artifacts",
                   code_dir=tmp_path) as run:
        make_trainer(recorder=run, checkpoint_dir=location, resume=True, **SETUP,
                     checkpoint=policy).fit()

    records = {r.step: r for r in store.list_checkpoints(run.run_id, include_deleted=True).items}
    assert records[12].deleted  # resumed from, recorded, then pruned: its deletion recorded
    assert [step for step, r in records.items() if not r.deleted] == [28, 30]
    assert "not recorded" not in caplog.text


def test_a_metric_that_was_not_finite_is_recorded_as_nan(tmp_path, store):
    with start_run("nan", store=store, artifacts=tmp_path, code_dir=tmp_path) as run:
        info = CheckpointInfo(3, "s3://b/step-3", 0, run.run_id, {"val_loss": None, "lr": 0.1})
        run.record_checkpoint(info.step, info.uri, info.epoch, info.metric_values)
    [record] = store.list_checkpoints(run.run_id).items
    assert math.isnan(record.metrics["val_loss"]) and record.metrics["lr"] == 0.1


class RandomRows(Dataset):
    """Items that draw random numbers when fetched (an augmentation)."""

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index):
        return torch.rand(3) + index, torch.tensor(float(index % 2))


@pytest.mark.parametrize("workers", [0, 2])
def test_batching_leaves_the_global_generator_alone_and_workers_are_seeded_by_position(workers):
    batches = make_batches(RandomRows(), "binary", 8, torch.device("cpu"), shuffle=True, seed=4,
                           num_workers=workers)
    torch.manual_seed(0)
    before = torch.get_rng_state()
    whole = list(batches.epoch(1))
    after = torch.get_rng_state()
    torch.set_rng_state(before)
    for _ in range(0 if workers else len(RandomRows())):  # items fetched here draw here
        torch.rand(3)
    assert torch.equal(after, torch.get_rng_state())
    tail = list(batches.epoch(1, start=3))
    assert len(tail) == len(whole) - 3
    if workers:  # fetched in worker processes, seeded by (seed, epoch, index)
        assert all(torch.equal(a[0], b[0]) for a, b in zip(tail, whole[3:]))
