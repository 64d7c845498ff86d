"""Shared fixtures: an isolated TRAINFORGE_HOME for every test, stores on every backend, and an
S3 server on loopback (moto's) with a fresh bucket per test.

PostgreSQL tests use the server at `TRAINFORGE_TEST_PG_URL` (a libpq URL whose database is a
maintenance database, default postgresql://postgres@127.0.0.1:5432/postgres). Each test gets a
fresh database, dropped afterwards. An unreachable server skips those tests, or fails them when
`TRAINFORGE_REQUIRE_POSTGRES=1`.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from trainforge.storage import Store, open_store

if TYPE_CHECKING:
    import psycopg

pytest_plugins = ["fraud_fixtures"]

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist each worker gets its share of the cores for torch's threads (its
    own, and those of the processes it starts, through `OMP_NUM_THREADS`): workers that each
    took every core would fight over them, and spinning OpenMP threads waste what they win."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None or "OMP_NUM_THREADS" in os.environ:
        return
    threads = max(1, (os.cpu_count() or 1) // int(workers))
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `slow` first, each group in its own order: under pytest-xdist the
    longest tests start at once, and the short ones fill the workers around them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """No test reads or writes the developer's .trainforge/ or database."""
    home = tmp_path_factory.mktemp("trainforge_home")
    monkeypatch.setenv("TRAINFORGE_HOME", str(home))
    monkeypatch.delenv("TRAINFORGE_DB", raising=False)
    return home


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The paths `os.fsync` is called on during the test, in order (files and folders)."""
    paths: list[Path] = []
    real_fsync = os.fsync

    def recording(fd: int) -> None:
        paths.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return paths


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """The URL of a SQLite file that does not exist yet."""
    return f"sqlite:///{tmp_path / 'db' / 'trainforge.db'}"


def _sqlalchemy_url(libpq_url: str, database: str) -> str:
    parts = urlsplit(libpq_url)
    return urlunsplit(("postgresql+psycopg", parts.netloc, f"/{database}", parts.query, ""))


def _admin_connection(admin_url: str) -> psycopg.Connection:
    """An autocommit connection to the maintenance database, or skip/fail saying why."""
    try:
        import psycopg

        return psycopg.connect(admin_url, autocommit=True, connect_timeout=5)
    except Exception as exc:  # any failure (driver, network, auth) means no usable server
        reason = f"PostgreSQL not reachable at {admin_url}: {exc}; set TRAINFORGE_TEST_PG_URL"
        if os.environ.get("TRAINFORGE_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A SQLAlchemy URL of a fresh, empty PostgreSQL database, dropped after the test."""
    admin_url = os.environ.get("TRAINFORGE_TEST_PG_URL", DEFAULT_PG_URL)
    name = f"tf_test_{uuid.uuid4().hex[:16]}"
    with _admin_connection(admin_url) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield _sqlalchemy_url(admin_url, name)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """A fresh database URL on each backend."""
    fixture = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return request.getfixturevalue(fixture)


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A migrated, empty store on each backend, opened as users open it (`open_store`); its
    connections are closed afterwards. The contract suite takes each area from it."""
    opened = open_store(db_url)
    try:
        yield opened
    finally:
        opened.close()


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
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a fresh, empty bucket on the moto server.

    The AWS variables (credentials, region, `AWS_ENDPOINT_URL`) point at the server for the
    test, so code that reads them from the environment, as s3fs does, reaches the bucket.
    """
    pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    bucket = f"tf-test-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture
def s3_bucket_needing_options(s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`s3_bucket`, reachable only through `s3_options`: the AWS variables that name the server
    and its credentials are unset, so a file system opened without the options finds neither.
    Such a file system stays in fsspec's instance cache: it is dropped afterwards."""
    import s3fs

    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    yield s3_bucket
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def s3_options(s3_endpoint: str) -> dict[str, Any]:
    """Storage options naming the moto server explicitly (credentials, endpoint, region)."""
    return {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
        "default_block_size": 5 * 2**20,  # S3's smallest part: big writes go multipart
    }
