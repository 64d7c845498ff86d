"""A small copy of the fraud example (its spec, contract and a few days of generated data)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from example_scripts import EXAMPLES, load_example_script

EXAMPLE = EXAMPLES / "fraud"


@pytest.fixture(scope="session")
def fraud_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated once per session: 6 days, 24,000 transactions."""
    out = tmp_path_factory.mktemp("fraud_slice")
    load_example_script("fraud", "generate.py").generate(out, days=6, rows=24_000, seed=7)
    return out


@pytest.fixture
def fraud_project(tmp_path: Path, fraud_slice: Path) -> Path:
    """A writable project folder: pipeline.yaml, contract.yaml and data/ of the slice."""
    shutil.copy(EXAMPLE / "pipeline.yaml", tmp_path / "pipeline.yaml")
    shutil.copy(EXAMPLE / "contract.yaml", tmp_path / "contract.yaml")
    shutil.copytree(fraud_slice, tmp_path / "data")
    return tmp_path
