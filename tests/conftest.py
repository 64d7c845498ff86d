"""Shared fixtures: an isolated TRAINFORGE_HOME for every test, stores on every backend, and an
S3 server on loopback (moto's) with a fresh bucket per test.

PostgreSQL (pg_databases.py says which server, and what happens when it is down): `db_url` is a
fresh database, dropped afterwards; `store` is the test process's migrated database, emptied
after each test.
"""

from __future__ import annotations

import gc
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pg_databases import ReusedDatabase, ReusedDatabases, fresh_database

from trainforge.storage import Store, open_store

if TYPE_CHECKING:
    from live_server import RestServer

pytest_plugins = ["fraud_fixtures"]


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


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collecting imported (torch and the rest: millions of objects) frozen out of the
    garbage collector's sight, as trainforge's own processes do (`trainforge._collector`):
    otherwise each full collection the tests set off walks all of it again."""
    gc.freeze()


# Tests sharing an expensive fixture of their module or folder (scope module or session), by
# path: under pytest-xdist each group is one unit of work, run by one worker, which makes the
# fixture once (spread over three workers, each would make its own).
SHARED_FIXTURES = {
    "tests/train/test_reshard.py": "checkpoints torchrun wrote at 2 and 4 ranks",
    "tests/train/test_distributed.py": "the torchrun job's results",
    "tests/cli/test_cli_checkpoints.py": "the trained run",
    "tests/tuning/test_pbt.py": "the study",
    "tests/serving/": "the trained fraud version",
    "tests/export/": "the trained fraud version",
    "tests/registry/": "the trained registry home",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `slow` first, each group in its own order: under pytest-xdist the
    longest tests start at once, and the short ones fill the workers around them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scheduler by scope, whose scopes are the groups of `SHARED_FIXTURES`
    and, for every other test, the test itself; in the order of the collection (slow tests
    first), each worker taking the next unit when it is almost out of work."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((prefix for prefix in SHARED_FIXTURES if path.startswith(prefix)),
                        nodeid)

    config.option.loadscopereorder = False  # the collection's order: slow tests first
    return SharedFixtureScheduling(config, log)


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


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A SQLAlchemy URL of a fresh, empty PostgreSQL database, dropped after the test."""
    with fresh_database() as url:
        yield url


@pytest.fixture(scope="session")
def reused_pg_databases() -> Iterator[ReusedDatabases]:
    """The test process's migrated PostgreSQL databases (`store`'s among them), emptied after
    each test that takes one and dropped at the end of the session."""
    databases = ReusedDatabases()
    try:
        yield databases
    finally:
        databases.drop_all()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend in turn: "sqlite", then "postgres"."""
    return str(request.param)


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest) -> str:
    """A fresh database URL on each backend, with nothing in it yet."""
    return str(request.getfixturevalue("sqlite_url" if backend == "sqlite" else "pg_url"))


@pytest.fixture
def store(sql_store: Store) -> Store:
    """`sql_store`: the store of each backend (the contract suite adds `trainforge server`'s
    in its own conftest)."""
    return sql_store


@pytest.fixture
def sql_store(backend: str, request: pytest.FixtureRequest) -> Iterator[Store]:
    """A migrated, empty store on each backend, opened as users open it (`open_store`); its
    connections are closed afterwards. The contract suite takes each area from it. On SQLite
    it is a fresh file; on PostgreSQL the test process's database, emptied afterwards (a test
    that needs a database of its own, or changes the schema, opens `db_url`)."""
    database: ReusedDatabase | None = None
    if backend == "sqlite":
        url = request.getfixturevalue("sqlite_url")
    else:
        database = request.getfixturevalue("reused_pg_databases").get("store")
        url = database.url
    opened = open_store(url)
    try:
        yield opened
    finally:
        opened.close()
        if database is not None:
            database.empty()


@pytest.fixture(scope="session")
def rest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """`trainforge server` on loopback for the whole session, with an editor's token in its
    URL (the store contract suite and the object store contract run on it)."""
    from live_server import RestServer, live_server

    from trainforge.config import Settings
    from trainforge.entities import Role
    from trainforge.server import create_server_app, issue_token
    from trainforge.session import Session

    home = tmp_path_factory.mktemp("rest-server")
    users = open_store(f"sqlite:///{home / 'users.db'}")
    users.add_user("client", Role.EDITOR)
    token, _ = issue_token(users, "client")
    app = create_server_app(Session(Settings.from_env({"TRAINFORGE_HOME": str(home)}),
                                    store=users))
    with live_server(app) as client:
        yield RestServer(app, str(client.base_url).replace("://", f"://:{token}@"), home,
                         users)
    users.close()


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
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of a fresh, empty bucket on the moto server.

    The AWS variables (credentials, region, `AWS_ENDPOINT_URL`) point at the server for the
    test, so code that reads them from the environment, as s3fs does, reaches the bucket.
    fsspec caches file systems by their arguments, not by the environment: one opened without
    options under other variables would be handed out again to a later test (this one, if an
    earlier test named `s3://` data it never reached; a later one, which would reach moto
    without setting anything), so the cache is emptied before and after.
    """
    s3fs = pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    s3fs.S3FileSystem.clear_instance_cache()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    bucket = f"tf-test-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=bucket)
    yield bucket
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def s3_bucket_needing_options(s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`s3_bucket`, reachable only through `s3_options`: the AWS variables that name the server
    and its credentials are unset, so a file system opened without the options finds neither.
    fsspec caches file systems by their arguments, not by the environment: one an earlier test
    of this process opened with no options, while the variables were set, would still reach
    the server. The cache is emptied before and after."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
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
