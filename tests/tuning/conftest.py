"""A writable copy of the digits example (its spec with the `tuning:` section, the contract and
the prepared images), the images prepared once per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from example_scripts import EXAMPLES, load_example_script

pytest.importorskip("sklearn", reason="the digits images ship with scikit-learn")


@pytest.fixture(scope="session")
def digits_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("digits_data")
    load_example_script("digits", "prepare.py").prepare(out)
    return out


@pytest.fixture
def digits_project(tmp_path: Path, digits_data: Path) -> Path:
    """pipeline.yaml, contract.yaml and data/digits.parquet in a fresh folder."""
    for name in ("pipeline.yaml", "contract.yaml"):
        shutil.copy(EXAMPLES / "digits" / name, tmp_path / name)
    shutil.copytree(digits_data, tmp_path / "data")
    return tmp_path
