"""Data versions: snapshots stored once per content, manifests written last, references,
checkouts checked against their hashes, diffs; each unchanged local file hashed once."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import trainforge.ingest._hashing as hashing
from trainforge.errors import DataError, DataNotFound
from trainforge.ingest import read_table
from trainforge.ingest._hashing import HashCache
from trainforge.storage import Store, open_store
from trainforge.storage.objects import open_object_store
from trainforge.versioning import DataRepository
from trainforge.versioning._repository import manifest_key, object_key


@pytest.fixture
def store(sqlite_url: str) -> Iterator[Store]:
    opened = open_store(sqlite_url)
    yield opened
    opened.close()


@pytest.fixture
def repository(store: Store, tmp_path: Path) -> DataRepository:
    return DataRepository(open_object_store(tmp_path / "objects"), store,
                          HashCache(tmp_path / "cache" / "hashes.sqlite"), tmp_path / "checkouts")


def _write_days(folder: Path, days: range) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for day in days:
        pd.DataFrame({"day": [day] * (day + 1), "amount": [float(day)] * (day + 1)}).to_parquet(
            folder / f"day-{day:02d}.parquet")


def test_a_snapshot_is_the_version_a_run_reading_the_files_records(
    repository: DataRepository, tmp_path: Path
) -> None:
    _write_days(tmp_path / "data", range(3))

    snap = repository.snapshot(str(tmp_path / "data"), name="daily")

    read = read_table(str(tmp_path / "data"))
    assert snap.version.data_version_id == read.fingerprint == snap.manifest.version_id
    assert snap.version.num_rows == 6 and snap.uploaded == 3
    assert [f["name"] for f in snap.version.files] == ["day-00.parquet", "day-01.parquet",
                                                       "day-02.parquet"]
    assert [f["rows"] for f in snap.version.files] == [1, 2, 3]
    assert repository.objects.exists(manifest_key(snap.version.data_version_id))
    assert repository.resolve("daily") == repository.resolve("daily@latest") == \
        snap.version.data_version_id


def test_unchanged_files_are_neither_hashed_nor_stored_twice(
    repository: DataRepository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_days(tmp_path / "data", range(3))
    first = repository.snapshot(str(tmp_path / "data"))
    hashed: list[str] = []
    digest = hashing._digest
    monkeypatch.setattr(hashing, "_digest", lambda fs, path: (hashed.append(path),
                                                              digest(fs, path))[1])
    _write_days(tmp_path / "data", range(3, 4))

    again = repository.snapshot(str(tmp_path / "data"))

    assert [Path(p).name for p in hashed] == ["day-03.parquet"]
    assert again.uploaded == 1 and again.reused == 3
    assert again.version.data_version_id != first.version.data_version_id


def test_a_no_op_snapshot_reads_and_writes_nothing_and_returns_the_stored_version(
    repository: DataRepository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_days(tmp_path / "data", range(3))
    first = repository.snapshot(str(tmp_path / "data"), name="days")
    manifest_file = repository.objects.local_path(manifest_key(first.version.data_version_id))
    assert manifest_file is not None
    written = manifest_file.stat().st_mtime_ns
    opened: list[str] = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda file, *args, **kwargs: (
        opened.append(str(file)), real_open(file, *args, **kwargs))[1])

    again = repository.snapshot(str(tmp_path / "data"), name="days")

    assert not [path for path in opened if "data" in Path(path).parts]
    assert again.uploaded == 0 and again.version == first.version
    assert manifest_file.stat().st_mtime_ns == written
    assert gc.isenabled()


def test_a_moved_or_renamed_file_is_not_uploaded_again(
    repository: DataRepository, tmp_path: Path
) -> None:
    _write_days(tmp_path / "data", range(2))
    first = repository.snapshot(str(tmp_path / "data"))
    (tmp_path / "data" / "day-00.parquet").rename(tmp_path / "data" / "renamed.parquet")
    objects_before = repository.objects.list("data/objects")

    moved = repository.snapshot(str(tmp_path / "data"))

    assert moved.uploaded == 0
    assert repository.objects.list("data/objects") == objects_before
    diff = repository.diff(first.version.data_version_id, moved.version.data_version_id)
    assert [f.name for f in diff.added] == ["renamed.parquet"]
    assert [f.name for f in diff.removed] == ["day-00.parquet"]


def test_checkout_restores_the_bytes_and_diff_names_changes(
    repository: DataRepository, tmp_path: Path
) -> None:
    _write_days(tmp_path / "data", range(3))
    old = repository.snapshot(str(tmp_path / "data"), name="daily")
    repository.tag("daily", "daily@day3")
    original = {p.name: p.read_bytes() for p in (tmp_path / "data").iterdir()}
    pd.DataFrame({"day": [9], "amount": [9.0]}).to_parquet(tmp_path / "data" / "day-01.parquet")
    (tmp_path / "data" / "day-02.parquet").unlink()
    _write_days(tmp_path / "data", range(5, 6))
    new = repository.snapshot(str(tmp_path / "data"), name="daily")

    repository.checkout("daily@day3", tmp_path / "restored")
    diff = repository.diff("daily@day3", "daily")

    assert {p.name: p.read_bytes() for p in (tmp_path / "restored").iterdir()} == original
    assert read_table(str(tmp_path / "restored")).fingerprint == old.version.data_version_id
    assert [f.name for f in diff.added] == ["day-05.parquet"]
    assert [f.name for f in diff.removed] == ["day-02.parquet"]
    assert [(a.name, a.rows, b.rows) for a, b in diff.changed] == [("day-01.parquet", 2, 1)]
    assert diff.unchanged == 1 and (diff.old.num_rows, diff.new.num_rows) == (6, 8)
    assert repository.resolve("daily") == new.version.data_version_id


def test_references_by_id_prefix_name_and_tag(
    repository: DataRepository, tmp_path: Path
) -> None:
    _write_days(tmp_path / "data", range(1))
    version_id = repository.snapshot(str(tmp_path / "data"), name="one").version.data_version_id

    assert repository.resolve(version_id) == repository.resolve(version_id[:6]) == version_id
    with pytest.raises(DataError, match=r"'abc': no stored id \(give at least 6 characters\), "
                                        r"name or name@tag of that name "
                                        r"\(tags: one@1, one@latest\)"):
        repository.resolve("abc")
    with pytest.raises(DataError, match=r"^no version one@nope \(versions: one@1, one@latest\)$"):
        repository.resolve("one@nope")
    with pytest.raises(DataError, match=r"tag 'one': expected NAME@TAG"):
        repository.tag(version_id, "one")
    with pytest.raises(DataError, match=r"data name 'bad name'"):
        repository.snapshot(str(tmp_path / "data"), name="bad name")


def test_checkout_refuses_a_folder_holding_files_and_damaged_objects(
    repository: DataRepository, tmp_path: Path
) -> None:
    _write_days(tmp_path / "data", range(2))
    snap = repository.snapshot(str(tmp_path / "data"))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(DataError, match=r"busy: expected an empty or missing folder"):
        repository.checkout(snap.version.data_version_id, tmp_path / "busy")

    entry = snap.manifest.files[0]
    repository.objects.write(object_key(entry.sha256), b"bit rot")
    with pytest.raises(DataError, match=rf"{entry.sha256}: damaged"):
        repository.checkout(snap.version.data_version_id, tmp_path / "restored")
    assert not [p for p in (tmp_path / "restored").rglob("*") if p.name.endswith(".parquet")]


def test_a_damaged_manifest_is_refused(repository: DataRepository, tmp_path: Path) -> None:
    _write_days(tmp_path / "data", range(2))
    version_id = repository.snapshot(str(tmp_path / "data")).version.data_version_id
    body = json.loads(repository.objects.read(manifest_key(version_id)))
    body["files"][0]["sha256"] = "0" * 64
    repository.objects.write(manifest_key(version_id), json.dumps(body).encode())

    with pytest.raises(DataError, match=r"damaged: its files hash to .*not the id it names"):
        repository.manifest(version_id)


def test_a_version_only_read_by_a_run_has_no_snapshot(
    repository: DataRepository, tmp_path: Path
) -> None:
    _write_days(tmp_path / "data", range(1))
    read = read_table(str(tmp_path / "data"))
    repository.versions.put_data_version(read.data_version())

    with pytest.raises(DataError, match=r"was read by a run but never snapshotted"):
        repository.checkout(read.fingerprint, tmp_path / "out")


def test_a_file_rewritten_while_uploaded_fails_the_snapshot_and_stores_nothing(
    repository: DataRepository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_days(tmp_path / "data", range(1))
    import trainforge.versioning._repository as module

    real = module.count_rows

    def rows_then_rewritten(fs: Any, file: Any) -> int:  # after it was hashed, before stored
        rows = real(fs, file)
        pd.DataFrame({"x": [1, 2, 3]}).to_parquet(file.path)
        return rows

    monkeypatch.setattr(module, "count_rows", rows_then_rewritten)

    with pytest.raises(DataError, match=r"day-00\.parquet: changed while it was snapshotted"):
        repository.snapshot(str(tmp_path / "data"))
    assert repository.objects.list("data") == {}


def test_materialize_checks_out_once_and_reads_back_the_version(
    repository: DataRepository, tmp_path: Path
) -> None:
    _write_days(tmp_path / "data", range(3))
    version_id = repository.snapshot(str(tmp_path / "data"), name="d").version.data_version_id
    _write_days(tmp_path / "data", range(3, 6))

    found, folder = repository.materialize("d")
    again = repository.materialize(version_id[:8])

    assert found == version_id and again == (version_id, folder)
    assert read_table(str(folder)).fingerprint == version_id
    assert sorted(p.name for p in folder.iterdir()) == [
        ".complete", "day-00.parquet", "day-01.parquet", "day-02.parquet"]


def test_snapshot_of_a_source_matching_nothing_names_it(
    repository: DataRepository, tmp_path: Path
) -> None:
    with pytest.raises(DataNotFound, match=r"missing-\*\.csv.*matches no file"):
        repository.snapshot(str(tmp_path / "missing-*.csv"))
    assert gc.isenabled()  # the collector, paused while a snapshot runs, is back
