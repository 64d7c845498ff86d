"""The GPU suite (`pytest -m gpu`): every test below this folder is marked `gpu` and, on a
machine without a CUDA device, skipped with the reason."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "train"))  # the trainer tests' helpers and torchrun script


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = None if torch.cuda.is_available() else (
        f"no CUDA device (torch {torch.__version__}, built for CUDA {torch.version.cuda}): "
        "the GPU suite runs on a machine with one")
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.gpu)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
