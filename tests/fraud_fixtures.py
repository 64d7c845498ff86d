"""A small copy of the fraud example (its spec, contract and a few days of generated data)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from example_scripts import EXAMPLES, load_example_script

EXAMPLE = EXAMPLES / "fraud"


@pytest.fixture(scope="session")
def fraud_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated once per session: 6 days, 24,000 transactions."""
    out = tmp_path_factory.mktemp("fraud_slice")
    load_example_script("fraud", "generate.py").generate(out, days=6, rows=24_000, seed=7)
    return out


def copy_fraud_project(folder: Path, data: Path) -> Path:
    """`folder` made a fraud project: the example's pipeline.yaml and contract.yaml, and
    `data` (a generated slice) as its data/."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE / "pipeline.yaml", folder / "pipeline.yaml")
    shutil.copy(EXAMPLE / "contract.yaml", folder / "contract.yaml")
    shutil.copytree(data, folder / "data")
    return folder


@pytest.fixture
def fraud_project(tmp_path: Path, fraud_slice: Path) -> Path:
    """A writable project folder: pipeline.yaml, contract.yaml and data/ of the slice."""
    return copy_fraud_project(tmp_path, fraud_slice)


@pytest.fixture
def fraud_project_on_s3(fraud_project: Path, s3_bucket_needing_options: str,
                        s3_options: dict[str, Any]) -> Path:
    """`fraud_project` whose data lies on S3 (moto's server), reached only through the spec's
    `data.storage_options` (endpoint and credentials)."""
    import s3fs

    s3_bucket = s3_bucket_needing_options
    s3fs.S3FileSystem(**s3_options).put(f"{fraud_project / 'data'}/", f"{s3_bucket}/data/",
                                        recursive=True)
    spec_path = fraud_project / "pipeline.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    spec["data"]["source"] = f"s3://{s3_bucket}/data/transactions-*.parquet"
    spec["data"]["storage_options"] = s3_options
    spec_path.write_text(yaml.safe_dump(spec))
    shutil.rmtree(fraud_project / "data")
    return fraud_project
