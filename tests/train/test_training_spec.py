"""The `training:` section: defaults that keep old specs working, and bad values named by field."""

from pathlib import Path

import pytest

from trainforge.config import TrainingSpec, load_spec
from trainforge.errors import SpecError
from trainforge.pipeline import load_checked_spec

FRAUD = Path(__file__).resolve().parents[2] / "examples" / "fraud" / "pipeline.yaml"


def test_the_fraud_example_still_loads_with_its_original_fields():
    training = load_spec(FRAUD).training
    assert (training.epochs, training.batch_size, training.optimizer.lr) == (4, 512, 0.002)
    assert (training.precision, training.strategy, training.accumulate_grad_batches) == (
        "fp32", "single", 1)
    assert training.schedule.name == "constant" and training.early_stopping is None


def test_profiler_true_is_short_for_enabled():
    assert TrainingSpec(profiler=True).profiler.enabled


@pytest.mark.parametrize("override,message", [
    ("training.optimizer.name=lion",
     "training.optimizer.name: expected one of 'adamw', 'adam' or 'sgd'"),
    ("training.schedule.name=exp", "training.schedule.name: expected one of 'constant', 'step'"),
    ("training.precision=fp8", "training.precision: expected one of 'fp32', 'bf16-mixed' or"),
    ("training.accumulate_grad_batches=0",
     "training.accumulate_grad_batches: expected an integer > 0"),
    ("training.strategy=horovod", "training.strategy: expected one of 'single', 'ddp' or 'fsdp'"),
    ("training.on_nan=ignore", "training.on_nan: expected one of 'error' or 'skip'"),
    ("training.clip={mode: norm}", "training.clip.max: required field is missing"),
    ("training.clip={mode: l1, max: 1}", "training.clip.mode: expected one of 'norm' or 'value'"),
    ("training.optimizer.momentum=0.9", "training.optimizer: momentum applies to sgd only"),
    ("training.schedule.min_lr=0.5", "training: schedule.min_lr (0.5) is above optimizer.lr"),
    ("training.optimizer.betas=[0.9, 1.5]",
     "training.optimizer.betas: each beta must be >= 0 and < 1, got [0.9, 1.5]"),
    ("training.early_stopping={patience: 2}", "training.early_stopping.metric: required field"),
    ("training.log_every_n_steps=0", "training.log_every_n_steps: expected an integer > 0"),
    ("training.checkpoint.preempt_on=[SIGFOO]",
     "training.checkpoint.preempt_on: unknown signal 'SIGFOO'; expected a name such as"),
    ("training.checkpoint.preempt_on=[SIGKILL]",
     "training.checkpoint.preempt_on: SIGKILL and SIGSTOP cannot be caught"),
    ("training.checkpoint.resume=always",
     "training.checkpoint.resume: expected one of 'never' or 'auto'"),
    ("training.checkpoint.keep_best=1",
     "training.checkpoint: keep_best needs monitor (the metric that ranks checkpoints)"),
    ("training.checkpoint.every_n_steps=0",
     "training.checkpoint.every_n_steps: expected an integer > 0"),
])
def test_bad_training_values_name_the_field(override, message):
    with pytest.raises(SpecError) as info:
        load_spec(FRAUD, [override])
    assert message in str(info.value)


def test_early_stopping_on_an_unknown_metric_is_found_by_validate():
    with pytest.raises(SpecError, match=r"training.early_stopping.metric: expected one of .*"
                                        r"got 'val_rocauc'; did you mean 'val_roc_auc'\?"):
        load_checked_spec(FRAUD, ["training.early_stopping.metric=val_rocauc"])


def test_a_checkpoint_monitor_that_is_never_logged_is_found_by_validate():
    with pytest.raises(SpecError, match=r"training.checkpoint.monitor: expected one of .*"
                                        r"got 'val_los'; did you mean 'val_loss'\?"):
        load_checked_spec(FRAUD, ["training.checkpoint.monitor=val_los"])


@pytest.mark.parametrize(("override", "message"), [
    ("registry.promotion.max_drop=[{metric: test_rocauc, max: 0.01}]",
     "registry.promotion.max_drop.0.metric: expected one of test_accuracy"),
    ("registry.promotion.max_slice_gap=[{metric: test_roc_auc, max: 0.1}]",
     "registry.promotion.max_slice_gap.0.metric: expected one of accuracy"),
])
def test_a_promotion_gate_on_an_unknown_metric_is_found_by_validate(override, message):
    with pytest.raises(SpecError) as info:
        load_checked_spec(FRAUD, [override])
    assert message in str(info.value) and "did you mean" in str(info.value)


def test_checkpoints_default_to_every_epoch_end_in_the_run_folder_without_auto_resume():
    checkpoint = load_spec(FRAUD).training.checkpoint
    assert (checkpoint.location, checkpoint.at_epoch_end, checkpoint.every_n_steps) == (
        None, True, None)
    assert (checkpoint.keep_last, checkpoint.resume, checkpoint.preempt_on) == (
        3, "never", ["SIGTERM"])


def test_early_stopping_on_any_logged_metric_is_valid():
    for metric in ("val_loss", "val_f1", "train_loss", "train_loss_epoch"):
        load_checked_spec(FRAUD, [f"training.early_stopping.metric={metric}"])
