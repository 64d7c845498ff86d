"""Numerics: gradient accumulation parity, clipping, optimizers, precision, the NaN guard and
deterministic mode."""

import math
import random

import numpy as np
import pytest
import torch
from train_helpers import (
    GradSnapshots,
    ParamSnapshots,
    Recorder,
    blobs,
    make_trainer,
    model_for,
)

from trainforge.config import ClipSpec, OptimizerSpec
from trainforge.errors import TrainingError
from trainforge.train import build_optimizer, make_clipper, make_precision
from trainforge.train._batches import epoch_order

SGD_LR_1 = {"name": "sgd", "lr": 1.0}  # the parameter change of a step is minus its gradient


@pytest.mark.parametrize("rows,windows", [
    (40, [24, 16]),  # 5 micro-batches of 8: a last window of 2 micro-batches
    (44, [24, 20]),  # 6 micro-batches, the last of 4 rows: a partial last micro-batch too
])
def test_accumulated_gradients_equal_those_of_one_large_batch(rows, windows):
    data = blobs("regression", n=2 * rows)
    accumulated, large = GradSnapshots(), GradSnapshots()
    sgd = {"name": "sgd", "lr": 0.01}
    make_trainer("regression", data, callbacks=[accumulated], batch_size=8,
                 accumulate_grad_batches=3, optimizer=sgd, epochs=2).fit()
    make_trainer("regression", data, callbacks=[large], batch_size=24, optimizer=sgd,
                 epochs=2).fit()
    assert len(accumulated.applied) == len(large.applied) == 2 * len(windows)
    for ours, theirs in zip(accumulated.applied, large.applied):
        assert torch.allclose(ours, theirs, rtol=0, atol=1e-6)


def test_accumulation_counts_optimizer_steps_and_logs_the_window_loss():
    recorder = Recorder()
    result = make_trainer(batch_size=8, accumulate_grad_batches=4, log_every_n_steps=1,
                          recorder=recorder, epochs=1).fit()
    assert result.steps == math.ceil(math.ceil(300 / 8) / 4)  # 38 micro-batches, 10 steps
    assert len(recorder.values("train_loss")) == result.steps


def test_clipping_by_norm_scales_all_gradients_to_the_limit():
    grads = [torch.tensor([3.0, 0.0]), torch.tensor([4.0])]
    make_clipper(ClipSpec(mode="norm", max=1.0))(grads, 5.0)
    assert torch.linalg.vector_norm(torch.cat(grads)).item() == pytest.approx(1.0, abs=1e-6)
    small = [torch.tensor([0.3, 0.4])]
    make_clipper(ClipSpec(mode="norm", max=1.0))(small, 0.5)
    assert small[0].tolist() == pytest.approx([0.3, 0.4])


def test_clipping_by_value_clamps_each_gradient():
    grads = [torch.tensor([-3.0, 0.2, 5.0])]
    make_clipper(ClipSpec(mode="value", max=0.5))(grads, 0.0)
    assert grads[0].tolist() == pytest.approx([-0.5, 0.2, 0.5])


@pytest.mark.parametrize("mode,limit", [("norm", 1e-3), ("value", 1e-4)])
def test_clipping_bounds_each_step_of_the_trainer(mode, limit):
    snapshots = ParamSnapshots()
    trainer = make_trainer(callbacks=[snapshots], optimizer=SGD_LR_1, epochs=1,
                           clip={"mode": mode, "max": limit})
    start = torch.cat([p.detach().flatten() for p in trainer.module.parameters()]).clone()
    trainer.fit()
    steps = torch.diff(torch.stack([start, *snapshots.after_step]), dim=0)
    if mode == "norm":
        assert torch.linalg.vector_norm(steps, dim=1).max().item() <= limit * (1 + 1e-4)
    else:
        assert steps.abs().max().item() <= limit * (1 + 1e-4)


@pytest.mark.parametrize("name,implementation,kind", [
    ("adamw", "auto", torch.optim.AdamW), ("adam", "foreach", torch.optim.Adam),
    ("sgd", "for_loop", torch.optim.SGD), ("adamw", "fused", torch.optim.AdamW),
])
def test_each_optimizer_trains(name, implementation, kind):
    optimizer = {"name": name, "lr": 0.05 if name == "sgd" else 0.01,
                 "implementation": implementation}
    if name == "sgd":
        optimizer["momentum"] = 0.9
    trainer = make_trainer(epochs=6, optimizer=optimizer)
    assert type(trainer.optimizer) is kind
    result = trainer.fit()
    assert result.history[-1]["val_loss"] < result.history[0]["val_loss"]
    assert result.history[-1]["val_roc_auc"] > 0.85


def test_auto_implementation_is_fused_on_cuda_and_foreach_elsewhere():
    params = list(model_for("binary").parameters())
    cpu = build_optimizer(OptimizerSpec(), params, torch.device("cpu"))
    assert cpu.defaults["foreach"] is True and not cpu.defaults["fused"]


def test_bf16_mixed_runs_on_cpu_under_autocast():
    seen = []
    model = model_for("binary")
    model[0].register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    result = make_trainer(model=model, precision="bf16-mixed", epochs=4,
                          optimizer={"lr": 0.01}).fit()
    assert seen[0] == torch.bfloat16
    assert all(p.dtype == torch.float32 for p in result.model.parameters())
    assert result.history[-1]["val_roc_auc"] > 0.85


def test_fp16_mixed_needs_cuda():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(TrainingError, match="'fp16-mixed' needs a CUDA device .* 'bf16-mixed'"):
        make_precision("fp16-mixed", torch.device("cpu"))


def poisoned_rows():
    """Binary blobs whose training row 40 holds an infinity, and the step that trains it."""
    (x, y), val = blobs("binary")
    x = x.copy()
    x[40, 0] = np.inf
    position = int((epoch_order(len(x), 0, 0, True) == 40).nonzero()[0, 0])
    return ((x, y), val), position // 32 + 1


def test_nan_loss_stops_training_naming_the_step_and_first_parameter():
    data, step = poisoned_rows()
    with pytest.raises(TrainingError) as info:
        make_trainer(data=data).fit()
    message = str(info.value)
    assert f"training loss became nan at step {step} (epoch 1, batch {step})" in message
    assert "first offending parameter: '0.weight' (gradient nan" in message


class NanGradient:
    """A gradient hook turning one parameter's gradient into NaN on chosen backward passes."""

    def __init__(self, on_calls):
        self.on_calls, self.calls = set(on_calls), 0

    def __call__(self, grad):
        self.calls += 1
        return grad * float("nan") if self.calls in self.on_calls else grad


def test_nan_gradient_stops_training_at_the_next_step_naming_the_spoiled_parameter():
    # By default only the loss is read each step: the NaN gradient of step 3 spoils 2.bias,
    # whose NaN value makes the loss of step 4 NaN, caught before step 4 is applied.
    model = model_for("binary")
    model[2].bias.register_hook(NanGradient({3}))
    with pytest.raises(TrainingError) as info:
        make_trainer(model=model).fit()
    message = str(info.value)
    assert "training loss became nan at step 4 (epoch 1, batch 4)" in message
    assert ("first offending parameter: '2.bias' (value nan, 1 of 1, set by the previous "
            "step's update)") in message


def test_nan_gradient_is_caught_at_its_own_step_when_gradients_are_read_every_step():
    model = model_for("binary")
    model[2].bias.register_hook(NanGradient({3}))
    with pytest.raises(TrainingError) as info:
        make_trainer(model=model, clip={"mode": "norm", "max": 10.0}).fit()
    message = str(info.value)
    assert "a gradient became non-finite at step 3 (epoch 1, batch 3)" in message
    assert "first offending parameter: '2.bias' (gradient nan, 1 of 1)" in message


def test_on_nan_skip_drops_the_step_and_continues():
    model = model_for("binary")
    model[2].bias.register_hook(NanGradient({3}))
    snapshots, recorder = ParamSnapshots(), Recorder()
    result = make_trainer(model=model, on_nan="skip", callbacks=[snapshots], recorder=recorder,
                          log_every_n_steps=1).fit()
    assert result.skipped_steps == 1 and result.steps == 20
    assert torch.equal(snapshots.after_step[2], snapshots.after_step[1])  # step 3 left no trace
    assert [s for s, _ in recorder.series("train_loss")] == [s for s in range(1, 21) if s != 3]
    assert all(torch.isfinite(p).all() for p in result.model.parameters())


def test_on_nan_skip_skips_every_step_with_a_poisoned_row():
    data, _ = poisoned_rows()
    result = make_trainer(data=data, on_nan="skip").fit()
    assert result.skipped_steps == 2  # once per epoch
    assert all(torch.isfinite(p).all() for p in result.model.parameters())


def test_deterministic_mode_gives_bit_identical_losses_and_is_recorded():
    class TaggedRecorder(Recorder):
        tags: dict = {}

        def set_tags(self, tags):
            self.tags = tags

    runs = [TaggedRecorder(), TaggedRecorder()]
    for recorder in runs:
        make_trainer(model=model_for("binary", dropout=0.3), deterministic=True,
                     log_every_n_steps=1, recorder=recorder).fit()
    assert not torch.are_deterministic_algorithms_enabled()  # the switch is the fit's only
    first, second = ([v.hex() for v in r.values("train_loss")] for r in runs)
    assert first == second and len(first) == 20
    assert runs[0].tags["trainer"]["deterministic"] is True
    assert runs[0].tags["trainer"] | {"seed": 0, "precision": "fp32", "world_size": 1} == \
        runs[0].tags["trainer"]


def test_building_and_fitting_a_trainer_leaves_the_process_generators_alone():
    model = model_for("binary", dropout=0.3)  # its initial weights come from the process's
    seed_process(123)
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_process(123)
    make_trainer(model=model, deterministic=True).fit()
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def seed_process(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def test_a_second_fit_continues_the_trainers_random_stream():
    """Two fits of one epoch each draw what one fit of two epochs draws (dropout included)."""
    once = Recorder()
    make_trainer(model=model_for("binary", dropout=0.3), epochs=2, log_every_n_steps=1,
                 recorder=once).fit()
    twice = Recorder()
    trainer = make_trainer(model=model_for("binary", dropout=0.3), epochs=1,
                           log_every_n_steps=1, recorder=twice)
    trainer.fit()
    trainer.config = trainer.config.model_copy(update={"epochs": 2})
    trainer.fit()
    assert [v.hex() for v in twice.values("train_loss")] == [
        v.hex() for v in once.values("train_loss")]
