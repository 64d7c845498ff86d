"""Helpers of the checkpoint tests: a small model trained a few steps, and its full state;
a trainer callback that crashes at a step."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainforge.train import Callback, Trainer
from trainforge.train.checkpoint import capture_rng_state


class CrashAt(Callback):
    """Raises "node lost" at the end of global step `step`, as a crash there would."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, trainer: Trainer) -> None:
        if trainer.state.global_step == self.step:
            raise RuntimeError("node lost")


def small_training(seed: int = 0) -> tuple[nn.Module, torch.optim.Optimizer, Any]:
    """A model, AdamW and a step scheduler after two training steps."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for _ in range(2):
        train_step(model, optimizer)
        scheduler.step()
    return model, optimizer, scheduler


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer) -> float:
    """One step on a random batch drawn from the global torch generator."""
    inputs = torch.randn(16, 4)
    loss = (model(inputs) - inputs.sum(1, keepdim=True)).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def full_state(model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any) -> dict:
    """The state a trainer would hand to the checkpoint manager."""
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": capture_rng_state(),
        "data": {"epoch": 1, "batch": 7, "sampler_seed": 3, "workers": [{"id": 0, "seen": 5}]},
        "trainer": {"global_step": 2, "best_metric": float("inf"), "early_stop": {"bad": 0}},
    }
