"""Progress output: the bar on a terminal, plain lines on their own cadence, and silence."""

import io
import logging
import sys

from train_helpers import Recorder, make_trainer

from trainforge.train import Callback, make_progress
from trainforge.train._progress import LogLines

TIMING = {"samples_per_s", "step_time_s"}  # measured on the wall clock: they differ per run


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Tick(Callback):
    """Each optimizer step takes `seconds` of the fake clock."""

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        self.clock, self.seconds = clock, seconds

    def on_step_end(self, trainer) -> None:
        self.clock.now += self.seconds


def progress_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "trainforge.train"]


def test_plain_lines_come_every_interval_and_at_each_epoch_end(caplog):
    clock = FakeClock()
    lines = LogLines(every_s=30.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="trainforge.train"):
        lines.start_epoch(0, 2, 100, 0)
        for step in range(1, 101):
            clock.now += 1.0
            lines.update(step, step, {"train_loss": 0.5, "lr": 0.01})
        lines.end_epoch({"epoch": 1.0, "train_loss_epoch": 0.5, "val_loss": 0.25})
    assert progress_lines(caplog) == [
        "epoch 1/2 batch 30/100 step 30 train_loss=0.5 lr=0.01",
        "epoch 1/2 batch 60/100 step 60 train_loss=0.5 lr=0.01",
        "epoch 1/2 batch 90/100 step 90 train_loss=0.5 lr=0.01",
        "epoch 1/2 done in 100.0s train_loss_epoch=0.5 val_loss=0.25",
    ]


def test_plain_cadence_restarts_with_each_epoch(caplog):
    clock = FakeClock()
    lines = LogLines(every_s=30.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="trainforge.train"):
        for epoch in range(2):
            lines.start_epoch(epoch, 2, 3, 0)
            for done in range(1, 4):
                clock.now += 20.0
                lines.update(done, epoch * 3 + done, {"train_loss": 1.0})
            lines.end_epoch({"train_loss_epoch": 1.0})
    assert progress_lines(caplog) == [
        "epoch 1/2 batch 2/3 step 2 train_loss=1",
        "epoch 1/2 done in 60.0s train_loss_epoch=1",
        "epoch 2/2 batch 2/3 step 5 train_loss=1",
        "epoch 2/2 done in 60.0s train_loss_epoch=1",
    ]


def test_plain_progress_of_a_trainer_follows_its_clock_not_log_every_n_steps(caplog):
    clock = FakeClock()
    recorder = Recorder()
    trainer = make_trainer(progress="plain", log_every_n_steps=1, recorder=recorder,
                           callbacks=[Tick(clock, 7.0)])
    trainer.progress = LogLines(every_s=30.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="trainforge.train"):
        trainer.fit()
    lines = progress_lines(caplog)
    assert len(recorder.series("train_loss")) == 20  # every step is logged to the run
    assert len(lines) == 4  # per epoch of 10 steps (70 s): one after 30 s, then the summary
    assert lines[0].startswith("epoch 1/2 batch 6/10 step 6 train_loss=")
    assert "samples_per_s=" in lines[0]
    assert lines[1].startswith("epoch 1/2 done in 70.0s train_loss_epoch=")
    assert "val_loss=" in lines[1] and "val_roc_auc=" in lines[1]
    assert lines[2].startswith("epoch 2/2 batch 6/10 step 16 train_loss=")
    assert lines[3].startswith("epoch 2/2 done in 70.0s train_loss_epoch=")


def test_progress_output_leaves_the_logged_metrics_alone(capsys):
    runs = {}
    for mode in ("off", "plain", "bar"):
        recorder = Recorder()
        make_trainer(progress=mode, log_every_n_steps=1, recorder=recorder).fit()
        runs[mode] = [(key, step, None if key in TIMING else value)
                      for key, value, step in recorder.points]
    assert len(runs["off"]) > 20 * 5
    assert runs["plain"] == runs["off"]
    assert runs["bar"] == runs["off"]


def test_auto_progress_is_plain_lines_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert isinstance(make_progress("auto", is_rank_zero=True), LogLines)


def test_progress_bar_draws_on_stderr(capsys):
    make_trainer(progress="bar", log_every_n_steps=5, epochs=1).fit()
    err = capsys.readouterr().err
    assert "epoch 1/1" in err and "loss" in err and "samples/s" in err


def test_off_progress_is_silent(caplog, capsys):
    with caplog.at_level(logging.INFO, logger="trainforge.train"):
        make_trainer(progress="off").fit()
    assert not progress_lines(caplog)
    assert capsys.readouterr().err == ""
