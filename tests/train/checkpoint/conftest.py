"""Fixtures of the checkpoint tests: a small training state, and a location on S3 (moto)."""

from __future__ import annotations

from typing import Any

import pytest
from checkpoint_helpers import full_state, small_training


@pytest.fixture
def training_state() -> dict:
    return full_state(*small_training())


@pytest.fixture
def s3_location(s3_bucket: str, s3_options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A location in a fresh bucket on the moto server: (`s3://bucket/prefix`, storage options)."""
    return f"s3://{s3_bucket}/runs/r1/checkpoints", s3_options
