"""Profiles kept in the database beside the data versions: each file's profile under its
sha256, the version's (their merge) under its id.

Rules:
- A file whose stored profile exists is not read again: profiling a folder that gained one
  day's file costs that file's profiling plus a merge. A file's key is its sha256, combined
  with its hive partition folders when it has some (they add columns to its rows).
- Files merge in path order; the version's profile is stored (replaced) under its id, so the
  profile, the drift baseline and the run all name the same id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainforge.ingest import (
    DEFAULT_BATCH_ROWS,
    HashCache,
    IngestResult,
    SourceListing,
    check_columns,
    content_id,
    file_batches,
    file_sha256,
    list_source_files,
    with_partitions,
)
from trainforge.profiles._dataset import DatasetProfile, merge_all
from trainforge.storage.contracts import DataVersionStore


def file_key(sha256: str, name: str) -> str:
    """The key of a file's profile: its sha256, with its `key=value` folders if any."""
    folders = [part for part in name.split("/")[:-1] if "=" in part]
    if not folders:
        return sha256
    return hashlib.sha256(f"{sha256}/{'/'.join(folders)}".encode()).hexdigest()


@dataclass(frozen=True)
class StoredProfile:
    """A version's profile, its id, and how many of its files had to be read."""

    version_id: str
    profile: DatasetProfile
    files: int
    profiled: int


def profile_files(store: DataVersionStore, version_id: str,
                  files: Sequence[tuple[str, Callable[[], DatasetProfile]]]) -> StoredProfile:
    """The profile of files given as (key, compute its profile), from stored per-file
    profiles where there are, stored under `version_id`."""
    stored = store.get_data_profiles([sha for sha, _ in files])
    profiles, profiled = [], 0
    for sha, compute in files:
        if sha in stored:
            profiles.append(DatasetProfile.from_bytes(stored[sha], f"stored profile {sha}"))
            continue
        profile = compute()
        store.put_data_profile(sha, "file", profile.rows, profile.to_bytes())
        stored[sha] = profile.to_bytes()
        profiles.append(profile)
        profiled += 1
    merged = merge_all(profiles)
    store.put_data_profile(version_id, "version", merged.rows, merged.to_bytes())
    return StoredProfile(version_id, merged, len(files), profiled)


def profile_ingested(store: DataVersionStore, raw: IngestResult) -> StoredProfile:
    """The profile of the files `raw` read (all their rows), from the rows in memory."""
    from trainforge.validate import frame_batches

    ends = [0]
    for file in raw.files:
        ends.append(ends[-1] + file.rows)

    def compute(index: int) -> Callable[[], DatasetProfile]:
        part = raw.frame.iloc[ends[index]:ends[index + 1]]
        return lambda: DatasetProfile.from_batches(batch for _, batch in frame_batches(part))

    return profile_files(store, raw.fingerprint,
                         [(file_key(f.sha256, f.name), compute(i))
                          for i, f in enumerate(raw.files)])


def profile_source(store: DataVersionStore, source: str, format: Any = "auto",
                   storage_options: Mapping[str, Any] | None = None,
                   hash_cache: HashCache | None = None) -> StoredProfile:
    """The profile of the files `source` names, streaming each file not profiled before."""
    listing = list_source_files(source, format, storage_options)
    hashes = [file_sha256(listing.fs, f.path, hash_cache)[1] for f in listing.files]
    return profile_listing(store, listing, hashes)


def profile_listing(store: DataVersionStore, listing: SourceListing,
                    hashes: Sequence[str]) -> StoredProfile:
    """The profile of a listing's files (`hashes`: their sha256), streaming each file not
    profiled before."""
    expected: list[set[str] | None] = [None]

    def compute(index: int) -> Callable[[], DatasetProfile]:
        def run() -> DatasetProfile:
            file = listing.files[index]
            schema, batches = file_batches(listing.fs, file, DEFAULT_BATCH_ROWS)
            expected[0] = check_columns(listing, index, schema, expected[0])
            types = listing.arrow_partition_types()
            return DatasetProfile.from_batches(with_partitions(b, file, types) for b in batches)
        return run

    version_id = content_id((f.name, sha) for f, sha in zip(listing.files, hashes, strict=True))
    return profile_files(store, version_id,
                         [(file_key(sha, listing.files[i].name), compute(i))
                          for i, sha in enumerate(hashes)])


def load_profile(store: DataVersionStore, version_id: str) -> DatasetProfile | None:
    """The stored profile of a data version, or None when it has none."""
    found = store.get_data_profiles([version_id]).get(version_id)
    return None if found is None else DatasetProfile.from_bytes(found, f"profile of {version_id}")
