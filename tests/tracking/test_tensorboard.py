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


def test_final_values_reach_tensorboard_and_no_event_file_is_empty(store, tmp_path: Path
                                                                    ) -> None:
    with start_run("tb", store=store, code_dir=tmp_path, tensorboard_dir=tmp_path / "tb",
                   flush_interval=0.05) as run:
        run.log_metrics({"rows_checked": 100.0}, step=0)  # a step before training
        assert run.truncate_metrics(after_step=-1, keys=["loss"]) == 0  # training starts
        for step in range(1, 11):
            run.log_metric("loss", 1.0 / step, step)
        run.set_summary({"test_roc_auc": 0.91, "threshold": 0.4})
    with start_run("tb", store=store, code_dir=tmp_path, tensorboard_dir=tmp_path / "tb"
                   ) as silent:
        pass

    folder = tmp_path / "tb" / run.run_id
    [events] = list(folder.iterdir())  # one file, nothing purged
    reader = event_accumulator.EventAccumulator(str(folder))
    reader.Reload()
    assert set(reader.Tags()["scalars"]) == {"rows_checked", "loss", "test_roc_auc",
                                              "threshold"}
    assert [(e.step, round(e.value, 6)) for e in reader.Scalars("test_roc_auc")] == [(10, 0.91)]
    assert [(e.step, e.value) for e in reader.Scalars("rows_checked")] == [(0, 100.0)]
    assert events.stat().st_size > 0
    assert not (tmp_path / "tb" / silent.run_id).exists()
