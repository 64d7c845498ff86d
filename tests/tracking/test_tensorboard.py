"""The TensorBoard option writes event files that TensorBoard's own reader reads back."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainforge.tracking import start_run

event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator",
    reason="the tensorboard package is not installed (pip install 'trainforge[tensorboard]')",
)


def test_scalars_round_trip_through_tensorboards_reader(store, tmp_path: Path) -> None:
    with start_run("tb", store=store, code_dir=tmp_path, tensorboard_dir=tmp_path / "tb",
                   flush_interval=0.05) as run:
        for step in range(50):
            run.log_metric("train/loss", 1.0 / (step + 1), step)
        run.log_metrics({"val_auc": 0.9}, step=49)
    reader = event_accumulator.EventAccumulator(str(tmp_path / "tb" / run.run_id))
    reader.Reload()
    assert set(reader.Tags()["scalars"]) == {"train/loss", "val_auc"}
    losses = reader.Scalars("train/loss")
    assert [e.step for e in losses] == list(range(50))
    assert losses[9].value == pytest.approx(0.1)
    assert [(e.step, round(e.value, 6)) for e in reader.Scalars("val_auc")] == [(49, 0.9)]
    assert len(store.get_metric_history(run.run_id, "train/loss").items) == 50


def test_a_resumed_run_purges_the_steps_it_logs_again(store, tmp_path: Path) -> None:
    with start_run("tb", store=store, code_dir=tmp_path, tensorboard_dir=tmp_path / "tb",
                   flush_interval=0.05) as run:
        for step in range(1, 31):
            run.log_metric("loss", float(step), step)
        assert run.truncate_metrics(after_step=20) == 10  # resumed from the checkpoint of 20
        for step in range(21, 41):
            run.log_metric("loss", step + 0.5, step)
    reader = event_accumulator.EventAccumulator(str(tmp_path / "tb" / run.run_id))
    reader.Reload()
    losses = [(e.step, e.value) for e in reader.Scalars("loss")]
    assert losses == [(s, float(s)) for s in range(1, 21)] + [(s, s + 0.5) for s in range(21, 41)]
