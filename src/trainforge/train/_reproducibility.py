"""Seeds and deterministic algorithms.

`seed_everything` seeds Python's `random`, NumPy's global generator and torch (CPU and every
CUDA device). `use_deterministic_algorithms` makes torch refuse nondeterministic kernels (and
cuDNN autotuning), so two runs with the same seed produce bit-identical losses on the same
machine; it sets process-wide switches and is only ever turned on, never off, by the trainer.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def use_deterministic_algorithms() -> None:
    # cuBLAS reads this when it initialises; harmless on CPU.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
