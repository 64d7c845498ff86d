"""Fixtures of the checkpoint tests: a small training state, and an S3 server on loopback."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from checkpoint_helpers import full_state, small_training


@pytest.fixture
def training_state() -> dict:
    return full_state(*small_training())


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 (a free port), for the whole session."""
    server_module = pytest.importorskip("moto.server")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_location(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict]:
    """A fresh bucket on the moto server: (`s3://bucket/prefix`, storage options)."""
    pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    options = {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
        "default_block_size": 5 * 2**20,  # S3's smallest part: big writes go multipart
    }
    bucket = f"ckpt-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/runs/r1/checkpoints", options
