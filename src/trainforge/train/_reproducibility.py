"""Seeds and deterministic algorithms, owned by the trainer instead of set on the process.

`TrainerRandomness` keeps a trainer's own random generators (Python's `random`, NumPy's global
generator, torch's CPU and CUDA generators), seeded once from `training.seed`. They are live
only inside `active()` blocks (`fit()` runs in one); outside, the process's generators are as
its caller left them, so building or fitting a Trainer leaves no global trace, and two runs
with the same seed draw the same numbers. With `deterministic`, torch refuses
nondeterministic kernels (and cuDNN autotuning) inside the block, so two runs with the same
seed produce bit-identical losses on the same machine; the switches are put back after it.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from trainforge.train.checkpoint import capture_rng_state, restore_rng_state


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


class TrainerRandomness:
    """A trainer's generators and determinism switches; see the module docstring. Used from the
    training thread only."""

    def __init__(self, seed: int, deterministic: bool) -> None:
        self.seed = seed
        self.deterministic = deterministic
        self._kept: dict[str, Any] | None = None  # the generators between blocks
        self._live = False

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """The trainer's generators (and switches) in place of the process's for the block."""
        outside = capture_rng_state()
        switches = _deterministic_switches()
        if self._kept is None:
            seed_everything(self.seed)
        else:
            restore_rng_state(self._kept)
        if self.deterministic:
            _use_deterministic_algorithms()
        self._live = True
        try:
            yield
        finally:
            self._live = False
            self._kept = capture_rng_state()
            restore_rng_state(outside)
            _set_deterministic_switches(switches)

    def state(self) -> dict[str, Any]:
        """The generators' state (for a checkpoint): live inside a block, kept outside."""
        if self._live:
            return capture_rng_state()
        with self.active():
            return capture_rng_state()

    def load(self, state: dict[str, Any]) -> None:
        """Continue from `state` (from `state()`): now inside a block, at the next otherwise."""
        if self._live:
            restore_rng_state(state)
        else:
            self._kept = state


def _use_deterministic_algorithms() -> None:
    # cuBLAS reads this when it initialises; harmless on CPU.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def _deterministic_switches() -> tuple[bool, bool, bool, bool]:
    return (torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)


def _set_deterministic_switches(switches: tuple[bool, bool, bool, bool]) -> None:
    enabled, warn_only, cudnn_deterministic, cudnn_benchmark = switches
    torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
    torch.backends.cudnn.deterministic = cudnn_deterministic
    torch.backends.cudnn.benchmark = cudnn_benchmark
