"""Snapshots of an s3:// source into an object store on S3 (moto's server), checked out back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from trainforge.ingest import read_table
from trainforge.storage import open_store
from trainforge.storage.objects import open_object_store
from trainforge.versioning import DataRepository


def test_an_s3_source_snapshots_into_s3_and_checks_out_locally(
    s3_bucket: str, s3_options: dict[str, Any], sqlite_url: str, tmp_path: Path
) -> None:
    import s3fs

    local = tmp_path / "events"
    for day, amounts in (("2024-01-01", [1.0, 2.0]), ("2024-01-02", [3.0, 4.0]),
                         ("2024-01-03", [3.0, 4.0])):
        (local / f"date={day}").mkdir(parents=True)
        pd.DataFrame({"amount": amounts}).to_parquet(local / f"date={day}" / "part.parquet")
    s3fs.S3FileSystem(**s3_options).put(f"{local}/", f"{s3_bucket}/raw/events/", recursive=True)
    store = open_store(sqlite_url)
    repository = DataRepository(open_object_store(f"s3://{s3_bucket}/artifacts", s3_options),
                                store)

    snap = repository.snapshot(f"s3://{s3_bucket}/raw/events", name="events",
                               storage_options=s3_options)
    again = repository.snapshot(f"s3://{s3_bucket}/raw/events", storage_options=s3_options)
    repository.checkout("events", tmp_path / "restored")

    assert snap.uploaded == 2, "the same bytes on two days are stored once"
    assert again.uploaded == 0
    assert snap.version.data_version_id == read_table(str(local)).fingerprint
    restored = read_table(str(tmp_path / "restored"))
    assert restored.fingerprint == snap.version.data_version_id
    assert restored.frame["date"].tolist() == [f"2024-01-0{d}" for d in (1, 1, 2, 2, 3, 3)]
    store.close()
