import numpy as np
import pytest
import torch

from trainforge.config import ModelSpec, TrainingSpec
from trainforge.errors import TrainingError
from trainforge.models import build_model
from trainforge.train import Trainer, load_weights, save_weights


class Recorder:
    def __init__(self):
        self.points: list[tuple[str, float, int]] = []

    def log_metrics(self, metrics, step):
        self.points.extend((k, v, step) for k, v in metrics.items())

    def series(self, key):
        return [(step, value) for k, value, step in self.points if k == key]


def blobs(task: str, n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    if task == "binary":
        y = (x[:, 0] * x[:, 1] + x[:, 2] > 0).astype(np.float32)
    elif task == "multiclass":
        y = np.digitize(x[:, 0] + x[:, 1], [-0.7, 0.7]).astype(np.int64)
    else:
        y = (2 * x[:, 0] - x[:, 3]).astype(np.float32)
    return (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :])


def fit(task: str, epochs: int = 8, recorder=None, **training):
    train, val = blobs(task)
    out = 3 if task == "multiclass" else 1
    torch.manual_seed(0)
    model = build_model(ModelSpec(task=task, hidden=[16]), 4, out)
    config = TrainingSpec(epochs=epochs, batch_size=32, seed=0, device="cpu", **training)
    return Trainer(model, train, val, config, task, recorder).fit()


@pytest.mark.parametrize("task,metric,better", [
    ("binary", "val_roc_auc", 0.9), ("multiclass", "val_accuracy", 0.8), ("regression", "val_r2", 0.9),
])
def test_each_task_learns(task, metric, better):
    result = fit(task, optimizer={"lr": 0.01})
    assert result.history[-1][metric] > better
    assert result.history[-1]["val_loss"] < result.history[0]["val_loss"]


def test_train_loss_is_logged_every_step_and_validation_every_epoch():
    recorder = Recorder()
    result = fit("binary", epochs=3, recorder=recorder)
    steps_per_epoch = 10  # 300 rows / batch 32
    assert result.steps == 3 * steps_per_epoch
    assert [s for s, _ in recorder.series("train_loss")] == list(range(1, result.steps + 1))
    assert [s for s, _ in recorder.series("val_loss")] == [10, 20, 30]


def test_same_seed_gives_the_identical_loss_series():
    first, second = Recorder(), Recorder()
    fit("binary", epochs=2, recorder=first)
    fit("binary", epochs=2, recorder=second)
    assert [v.hex() for _, v in first.series("train_loss")] == [
        v.hex() for _, v in second.series("train_loss")
    ]


def test_non_finite_loss_stops_training_naming_the_step():
    train, val = blobs("binary")
    train[0][40] = np.inf  # in the second batch of an unshuffled... any batch holding row 40
    model = build_model(ModelSpec(task="binary", hidden=[4]), 4, 1)
    trainer = Trainer(model, train, val, TrainingSpec(epochs=1, batch_size=32, device="cpu"),
                      "binary")
    with pytest.raises(TrainingError, match=r"training loss became nan at step \d+"):
        trainer.fit()


def test_cuda_requested_without_a_device_is_an_error():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    train, val = blobs("binary")
    model = build_model(ModelSpec(task="binary"), 4, 1)
    with pytest.raises(TrainingError, match="training.device: 'cuda' requested"):
        Trainer(model, train, val, TrainingSpec(device="cuda"), "binary")


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
