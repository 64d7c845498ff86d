"""The trainer on CUDA: NCCL DDP and FSDP, fp16 with the gradient scaler, fused optimizers,
TF32, the pinned-memory async snapshot, CUDA RNG in a bit-exact resume, and the throughput
figure. Skipped with the reason where there is no CUDA device (conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import distributed_script as script
import pytest
import torch
from torch import nn
from train_helpers import blobs, make_trainer, model_for

from trainforge.config import CheckpointSpec, OptimizerSpec
from trainforge.train import Callback, Trainer
from trainforge.train._optim import build_optimizer
from trainforge.train._precision import make_precision
from trainforge.train.checkpoint import CheckpointManager

ROOT = Path(__file__).resolve().parents[2]
TRAIN_TESTS = ROOT / "tests" / "train"
CUDA = {"device": "cuda"}


def test_nccl_ddp_and_fsdp_match_one_process_with_the_same_global_batch(tmp_path: Path) -> None:
    world = torch.cuda.device_count()  # NCCL: one process per device
    out = tmp_path / "results.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(world), str(TRAIN_TESTS / "distributed_script.py"),
               str(out), "cuda"]
    env = {**os.environ, "PYTHONPATH": str(TRAIN_TESTS)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(out.read_text())
    assert results["collectives"] == {"mean_of_ranks": (world - 1) / 2, "world_size": world}
    for case, (_, accumulate, clip) in script.CASES.items():
        reference = script.train_case("single", accumulate, clip,
                                      script.BATCH_PER_RANK * world, device="cuda")
        launched = results[case]
        assert launched["train_loss"] == pytest.approx(reference["train_loss"], abs=1e-4), case
        assert launched["val_loss"] == pytest.approx(reference["val_loss"], abs=1e-4), case
        for name, values in reference["weights"].items():
            assert launched["weights"][name] == pytest.approx(values, abs=1e-4), (case, name)


class OverflowAt(Callback):
    """Multiplies the gradient of the first layer's output by 1e6 in one training step: the
    scaled float16 gradient (max 65504) overflows there while the loss stays finite, as a real
    overflow does. Records the loss scale and the weights after every step."""

    def __init__(self, model: nn.Module, forward: int) -> None:
        self.forward, self.seen = forward, 0
        self.scales: list[float] = []
        self.weights: list[torch.Tensor] = []
        first = next(m for m in model.modules() if isinstance(m, nn.Linear))
        first.register_forward_hook(self._blow_up)

    def _blow_up(self, module: nn.Module, args: tuple, output: torch.Tensor) -> None:
        if module.training:
            self.seen += 1
            if self.seen == self.forward:
                output.register_hook(lambda grad: grad * 1e6)

    def on_fit_start(self, trainer: Trainer) -> None:
        self.scales.append(trainer.precision.scaler.get_scale())  # type: ignore[attr-defined]
        self.weights.append(_flat(trainer.module))

    def on_step_end(self, trainer: Trainer) -> None:
        self.scales.append(trainer.precision.scaler.get_scale())  # type: ignore[attr-defined]
        self.weights.append(_flat(trainer.module))


def _flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()]).clone()


def test_fp16_overflow_skips_the_step_and_the_scale_backs_off() -> None:
    model = model_for("binary")
    overflow = OverflowAt(model, forward=4)
    result = make_trainer(model=model, callbacks=[overflow], precision="fp16-mixed", epochs=1,
                          optimizer={"lr": 0.01}, **CUDA).fit()
    scales, weights = overflow.scales, overflow.weights
    assert scales[4] == scales[3] * 0.5  # GradScaler's backoff factor
    assert torch.equal(weights[4], weights[3])  # the overflowing step changed nothing
    for step in range(1, len(scales)):
        if scales[step] >= scales[step - 1]:  # a step the scaler took moved the weights
            assert not torch.equal(weights[step], weights[step - 1]), step
    assert all(torch.isfinite(p).all() for p in result.model.parameters())
    assert result.skipped_steps == 0  # the scaler's business, not the NaN guard's


def test_auto_optimizer_is_fused_on_cuda_and_learns() -> None:
    params = list(model_for("binary").to("cuda").parameters())
    optimizer = build_optimizer(OptimizerSpec(), params, torch.device("cuda"))
    assert optimizer.defaults["fused"] is True
    result = make_trainer(epochs=6, optimizer={"lr": 0.01}, **CUDA).fit()
    assert result.history[-1]["val_roc_auc"] > 0.85


def test_tf32_is_the_spec_switch_for_cuda_matmuls() -> None:
    make_precision("fp32", torch.device("cuda"), tf32=True)
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    a, b = torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")
    exact = (a.double() @ b.double()).float()
    tf32_error = ((a @ b) - exact).abs().max().item()
    make_precision("fp32", torch.device("cuda"), tf32=False)
    assert not torch.backends.cuda.matmul.allow_tf32
    fp32_error = ((a @ b) - exact).abs().max().item()
    if torch.cuda.get_device_capability() >= (8, 0):  # TF32 exists from Ampere on
        assert tf32_error > 10 * fp32_error
    result = make_trainer(epochs=4, tf32=True, optimizer={"lr": 0.01}, **CUDA).fit()
    assert result.history[-1]["val_roc_auc"] > 0.85


def test_async_snapshot_of_cuda_tensors_is_pinned_and_saved_exactly(tmp_path: Path) -> None:
    state = {"model": {"w": torch.randn(1024, 1024, device="cuda"),
                       "b": torch.arange(10, device="cuda")}}
    with CheckpointManager(tmp_path, CheckpointSpec(async_save=True), "r1") as manager:
        manager.prepare(state)
        manager.save(1, state)
        block = manager._arena._block
        assert block is not None and block.is_pinned()
        given = state["model"]["w"].cpu()
        state["model"]["w"].add_(1)  # the save holds the values it was given
        assert manager.wait() is not None
        loaded, info = manager.load()
    assert info.step == 1
    assert torch.equal(loaded["model"]["w"], given)
    assert torch.equal(loaded["model"]["b"], state["model"]["b"].cpu())


class CrashAt(Callback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, trainer: Trainer) -> None:
        if trainer.state.global_step == self.step:
            raise RuntimeError("crash")


def test_resume_restores_the_cuda_generator_bit_for_bit(tmp_path: Path) -> None:
    setup = dict(epochs=3, batch_size=16, deterministic=True, optimizer={"lr": 0.01},
                 checkpoint={"every_n_steps": 10, "async_save": False}, **CUDA)
    data = blobs("binary")
    dropout = dict(hidden=(32, 16), dropout=0.3)
    whole = make_trainer(data=data, model=model_for("binary", **dropout), **setup).fit()
    with pytest.raises(RuntimeError, match="crash"):
        make_trainer(data=data, model=model_for("binary", **dropout), callbacks=[CrashAt(14)],
                     checkpoint_dir=tmp_path, **setup).fit()
    torch.cuda.manual_seed_all(1234)  # the resumed process starts from other CUDA state
    resumed = make_trainer(data=data, model=model_for("binary", seed=99, **dropout),
                           checkpoint_dir=tmp_path, resume=True, **setup)
    result = resumed.fit()
    assert resumed.checkpointing.resumed_from is not None
    assert resumed.checkpointing.resumed_from.step == 10
    for ours, theirs in zip(result.model.parameters(), whole.model.parameters(), strict=True):
        assert torch.equal(ours, theirs)


def test_throughput_figures_of_the_example_models() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_throughput.py"),
                           "--device", "cuda", "--epochs", "1", "--fraud-rows", "50000"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    figures = json.loads(done.stdout)
    assert figures["device"] == torch.cuda.get_device_name()
    for name in ("digits", "fraud"):
        model = figures["models"][name]
        assert model["samples_per_s"] > 0 and model["flops_per_sample"] > 0, name
        assert 0 < model["mfu"] < 1, name
