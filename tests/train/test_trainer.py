"""The Trainer's loop: learning on each task, what it logs and when, its inputs, weights I/O."""

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset
from train_helpers import Recorder, blobs, make_trainer, model_for

from trainforge.config import ModelSpec, TrainingSpec
from trainforge.errors import TrainingError
from trainforge.models import build_model
from trainforge.train import Trainer, infer_task, load_weights, logged_metric_names, save_weights


@pytest.mark.parametrize("task,metric,better", [
    ("binary", "val_roc_auc", 0.9), ("multiclass", "val_accuracy", 0.8),
    ("regression", "val_r2", 0.9),
])
def test_each_task_learns(task, metric, better):
    result = make_trainer(task, epochs=8, optimizer={"lr": 0.01}).fit()
    assert result.history[-1][metric] > better
    assert result.history[-1]["val_loss"] < result.history[0]["val_loss"]


def test_step_metrics_every_n_steps_and_at_epoch_ends_validation_every_epoch():
    recorder = Recorder()
    result = make_trainer(epochs=3, log_every_n_steps=4, recorder=recorder).fit()
    assert result.steps == 30  # 300 rows / batch 32 = 10 steps per epoch
    expected = sorted({*range(4, 31, 4), 10, 20, 30})
    for key in ("train_loss", "lr", "grad_norm", "samples_per_s", "step_time_s"):
        assert [step for step, _ in recorder.series(key)] == expected, key
    assert [step for step, _ in recorder.series("val_loss")] == [10, 20, 30]
    assert {k for k, _, _ in recorder.points} == set(logged_metric_names("binary"))
    assert all(v > 0 for v in recorder.values("samples_per_s"))


def test_validation_every_n_steps_too_leaves_training_unchanged():
    plain, checked = Recorder(), Recorder()
    make_trainer(epochs=2, log_every_n_steps=1, recorder=plain).fit()
    result = make_trainer(epochs=2, log_every_n_steps=1, val_every_n_steps=4,
                          recorder=checked).fit()
    assert [step for step, _ in checked.series("val_loss")] == [4, 8, 10, 12, 16, 20]
    assert [step for step, _ in checked.series("val_accuracy")][:2] == [4, 8]
    assert [v.hex() for v in checked.values("train_loss")] == [
        v.hex() for v in plain.values("train_loss")]
    assert [epoch["val_loss"] for epoch in result.history] == [
        v for step, v in checked.series("val_loss") if step in (10, 20)]


def test_logged_train_loss_is_the_mean_of_the_steps_since_the_last_log():
    every_step, every_five = Recorder(), Recorder()
    make_trainer(epochs=1, log_every_n_steps=1, recorder=every_step).fit()
    make_trainer(epochs=1, log_every_n_steps=5, recorder=every_five).fit()
    losses = every_step.values("train_loss")
    assert every_five.values("train_loss") == pytest.approx(
        [np.mean(losses[:5]), np.mean(losses[5:])], rel=1e-12)
    [epoch_loss] = every_step.values("train_loss_epoch")
    assert epoch_loss == pytest.approx(np.mean(losses), rel=1e-12)


def test_same_seed_gives_the_identical_loss_series():
    first, second = Recorder(), Recorder()
    make_trainer(log_every_n_steps=1, recorder=first).fit()
    make_trainer(log_every_n_steps=1, recorder=second).fit()
    assert [v.hex() for v in first.values("train_loss")] == [
        v.hex() for v in second.values("train_loss")]


def test_a_torch_dataset_trains_like_the_same_arrays():
    (x, y), val = blobs("binary")
    from_arrays, from_dataset = Recorder(), Recorder()
    make_trainer(data=((x, y), val), log_every_n_steps=1, recorder=from_arrays).fit()
    dataset = TensorDataset(torch.from_numpy(x), torch.from_numpy(y).long())  # ints become floats
    make_trainer(data=(dataset, val), log_every_n_steps=1, recorder=from_dataset).fit()
    assert from_dataset.values("train_loss") == from_arrays.values("train_loss")


def test_training_without_validation_data_logs_only_training_metrics():
    recorder = Recorder()
    train, _ = blobs("binary")
    Trainer(model_for("binary"), train, None, TrainingSpec(epochs=1, device="cpu"), "binary",
            recorder).fit()
    assert {k for k, _, _ in recorder.points} == set(logged_metric_names("binary", False))


@pytest.mark.parametrize("targets,task", [
    (np.array([0, 1, 2]), "multiclass"), (np.array([0.0, 1.0, 1.0]), "binary"),
    (np.array([0.5, 1.0, 2.0]), "regression"),
])
def test_task_is_inferred_from_array_targets(targets, task):
    assert infer_task((np.zeros((3, 2)), targets)) == task


def test_task_is_required_with_a_dataset():
    dataset = TensorDataset(torch.zeros(4, 2), torch.zeros(4))
    with pytest.raises(TrainingError, match="pass task="):
        Trainer(model_for("binary", features=2), dataset, None, TrainingSpec(device="cpu"))


def test_features_and_targets_of_different_lengths_are_refused():
    x, y = np.zeros((5, 4), np.float32), np.zeros(4, np.float32)
    with pytest.raises(TrainingError, match="5 feature rows and 4 targets"):
        Trainer(model_for("binary"), (x, y), None, TrainingSpec(device="cpu"), "binary")


def test_cuda_requested_without_a_device_is_an_error():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(TrainingError, match="training.device: 'cuda' requested"):
        make_trainer(device="cuda")


def test_weights_round_trip_through_safetensors(tmp_path):
    model = build_model(ModelSpec(task="binary", hidden=[8]), 4, 1)
    path = save_weights(model, tmp_path / "w.safetensors")
    fresh = build_model(ModelSpec(task="binary", hidden=[8]), 4, 1)
    load_weights(fresh, path)
    for a, b in zip(model.state_dict().values(), fresh.state_dict().values()):
        assert torch.equal(a, b)


def test_corrupt_weights_file_is_a_clear_error(tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"not safetensors at all")
    model = build_model(ModelSpec(task="binary"), 4, 1)
    with pytest.raises(TrainingError, match="cannot read safetensors weights"):
        load_weights(model, path)


def test_weights_of_another_shape_are_refused(tmp_path):
    path = save_weights(build_model(ModelSpec(task="binary", hidden=[8]), 4, 1), tmp_path / "w.st")
    with pytest.raises(TrainingError, match="weights do not fit the model"):
        load_weights(build_model(ModelSpec(task="binary", hidden=[9]), 4, 1), path)
