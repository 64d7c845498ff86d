"""A snapshot killed with SIGKILL mid-upload leaves every earlier version whole and no
half manifest; the next snapshot completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd

from trainforge.ingest import read_table
from trainforge.ingest._hashing import HashCache
from trainforge.storage import open_store
from trainforge.storage.objects import open_object_store
from trainforge.versioning import DataRepository

CHILD = textwrap.dedent("""
    import sys, time
    from contextlib import contextmanager
    from pathlib import Path
    from trainforge.storage import open_store
    from trainforge.storage.objects import open_object_store
    from trainforge.versioning import DataRepository

    url, objects, source, ready = sys.argv[1:]
    store = open_object_store(objects)
    batch = store.batch

    class Slowed:
        def __init__(self, staging):
            self.staging = staging

        def write(self, key, data):
            def chunks():
                for number, chunk in enumerate([data] if isinstance(data, bytes) else data):
                    yield chunk
                    if number == 0:
                        Path(ready).write_text("uploading")
                        time.sleep(600)
            self.staging.write(key, chunks())

    @contextmanager
    def slow_batch():
        with batch() as staging:
            yield Slowed(staging)
    store.batch = slow_batch
    DataRepository(store, open_store(url)).snapshot(source, name="daily")
""")


def test_snapshot_killed_mid_upload_leaves_the_previous_version_whole(
    sqlite_url: str, tmp_path: Path
) -> None:
    data, objects = tmp_path / "data", tmp_path / "objects"
    data.mkdir()
    for day in range(3):
        pd.DataFrame({"x": range(day * 1000, day * 1000 + 5000)}).to_parquet(
            data / f"day-{day}.parquet")
    store = open_store(sqlite_url)
    repository = DataRepository(open_object_store(objects), store,
                                HashCache(tmp_path / "hashes.sqlite"))
    before = repository.snapshot(str(data), name="daily").version.data_version_id
    pd.DataFrame({"x": range(7000)}).to_parquet(data / "day-3.parquet")
    ready = tmp_path / "ready"

    child = subprocess.Popen([sys.executable, "-c", CHILD, sqlite_url, str(objects), str(data),
                              str(ready)])
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert child.poll() is None, "the snapshot ended before it was killed"
            assert time.monotonic() < deadline, "the snapshot never started uploading"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()

    assert repository.resolve("daily") == before
    assert list(repository.objects.list("data/manifests")) == [f"data/manifests/{before}.json"]
    repository.checkout("daily", tmp_path / "restored")
    assert read_table(str(tmp_path / "restored")).fingerprint == before
    after = repository.snapshot(str(data), name="daily")
    assert after.uploaded == 1
    assert after.version.data_version_id == read_table(str(data)).fingerprint
    store.close()
