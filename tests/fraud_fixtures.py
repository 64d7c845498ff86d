"""A small copy of the fraud example (its spec, contract and a few days of generated data)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fraud"


def _generator():
    spec = importlib.util.spec_from_file_location("fraud_generate", EXAMPLE / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def fraud_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated once per session: 6 days, 24,000 transactions."""
    out = tmp_path_factory.mktemp("fraud_slice")
    _generator().generate(out, days=6, rows=24_000, seed=7)
    return out


@pytest.fixture
def fraud_project(tmp_path: Path, fraud_slice: Path) -> Path:
    """A writable project folder: pipeline.yaml, contract.yaml and data/ of the slice."""
    shutil.copy(EXAMPLE / "pipeline.yaml", tmp_path / "pipeline.yaml")
    shutil.copy(EXAMPLE / "contract.yaml", tmp_path / "contract.yaml")
    shutil.copytree(fraud_slice, tmp_path / "data")
    return tmp_path
