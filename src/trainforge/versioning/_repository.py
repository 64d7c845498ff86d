"""Content-addressed data versions in the object store, named in the database.

Key layout in the object store (the artifact root):

    data/objects/<sha256[:2]>/<sha256>     each file's bytes, stored once whatever its name
    data/manifests/<version id>.json       the manifest (`_manifest.py`), written last

Rules:
- `snapshot` lists the source (any `ingest` source: folder, glob, `s3://`), hashes each file
  (an unchanged local file is read once: `HashCache`), counts its rows, uploads the objects
  the store lacks (a renamed or moved file is not uploaded again; files are read, hashed and
  uploaded by `IO_THREADS` threads, one per core when source and store are local, a small
  file from a single read, the objects written as one batch of the object store), then
  writes the manifest (unless the store holds it: its key is its content's id), then
  records the version in the database, numbers it under `NAME` (`NAME@1`, `NAME@2`, ...: a
  version keeps its number for good, a version already numbered keeps the one it has) and
  moves `NAME@latest`. An object is the very bytes
  that were hashed, or, streamed from its file again (a large or remote one), checked against
  the hash at the end: a file rewritten since it was hashed fails the snapshot, and the
  object is never published. A snapshot killed at any
  point leaves every earlier version whole: objects are written atomically and a version
  exists only once its manifest does.
- A reference (`resolve`) is a full id, a unique id prefix of 6 or more characters, `NAME`
  (`NAME@latest`), `NAME@NUMBER` or `NAME@TAG`; a tag of digits is never set by hand.
- `checkout` writes a version's files under their names into an empty or missing folder,
  each file atomically (a temporary name, then a rename), each checked against its hash.
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from trainforge.entities import DataTag, DataVersion
from trainforge.errors import DataError, NotFound, ObjectNotFound
from trainforge.ingest import (
    Format,
    HashCache,
    SourceFileInfo,
    SourceListing,
    count_rows,
    csv_rows_without_parsing,
    file_sha256,
    list_source_files,
    stat_key,
)
from trainforge.storage.contracts import DataVersionStore
from trainforge.storage.objects import ObjectBatch, ObjectStore
from trainforge.versioning._manifest import Manifest, ManifestEntry

IO_THREADS = 8  # files hashed, counted and uploaded at once: waits on disk and network overlap
OBJECTS = "data/objects"
MANIFESTS = "data/manifests"
LATEST = "latest"
MIN_PREFIX = 6
_CHUNK = 1 << 20
_TASK_ITEMS = 64  # files per pool task at most
_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")


@dataclass(frozen=True)
class Snapshot:
    """A snapshot taken: its version, manifest, how many files were uploaded (the rest the
    store already held) and, taken with a name, its number under that name."""

    version: DataVersion
    manifest: Manifest
    uploaded: int
    number: DataTag | None = None

    @property
    def reused(self) -> int:
        return len(self.manifest.files) - self.uploaded


@dataclass(frozen=True)
class DataDiff:
    """Files of `new` against `old` by name: added, removed, changed (same name, other bytes),
    and the rows of each version."""

    old: Manifest
    new: Manifest
    added: tuple[ManifestEntry, ...]
    removed: tuple[ManifestEntry, ...]
    changed: tuple[tuple[ManifestEntry, ManifestEntry], ...]

    @property
    def unchanged(self) -> int:
        return len(self.new.files) - len(self.added) - len(self.changed)


class DataRepository:
    """Snapshots, manifests, references and checkouts over one object store and database."""

    def __init__(self, objects: ObjectStore, versions: DataVersionStore,
                 hash_cache: HashCache | None = None, checkout_cache: Path | None = None) -> None:
        self.objects = objects
        self.versions = versions
        self.hash_cache = hash_cache
        self.checkout_cache = checkout_cache

    def snapshot(self, source: str, *, name: str | None = None, format: Format = "auto",
                 storage_options: Mapping[str, Any] | None = None) -> Snapshot:
        if name is not None:
            check_name(name, "name")
        with _collector_paused():
            return self._snapshot(source, name, format, storage_options)

    def _snapshot(self, source: str, name: str | None, format: Format,
                  storage_options: Mapping[str, Any] | None) -> Snapshot:
        listing = list_source_files(source, format, storage_options)
        first, last = listing.files[0], listing.files[-1]
        if self.hash_cache is not None and first.stat is not None:  # local files
            # in path order, the common path of the first and last is every path's
            self.hash_cache.preload(os.path.commonpath([first.path, last.path]))
        with self.objects.batch() as batch, \
                ThreadPoolExecutor(self._threads(listing)) as pool:  # joined before batch's end
            uploads = _Uploads(self.objects, batch, self._stored_hashes(), listing.fs)
            measured = self._measure_all(listing, pool, uploads)
        entries = [ManifestEntry(file.name, sha256, file.size, rows)
                   for file, (sha256, rows) in zip(listing.files, measured, strict=True)]
        manifest = Manifest(source, tuple(sorted(entries, key=lambda e: e.name)))
        if not self.objects.exists(manifest_key(manifest.version_id)):  # content-addressed
            self.objects.write(manifest_key(manifest.version_id), manifest.to_json())
        version = self.versions.put_data_version(DataVersion(
            manifest.version_id, source, manifest.file_dicts(), manifest.num_rows))
        number = None
        if name is not None:
            number = self.versions.number_data_version(name, version.data_version_id)
            self.versions.set_data_tag(name, LATEST, version.data_version_id)
        return Snapshot(version, manifest, uploads.count, number)

    def resolve(self, reference: str) -> str:
        """The data version id `reference` names; DataError saying what is known otherwise."""
        if len(reference) >= MIN_PREFIX and re.fullmatch(r"[0-9a-f]+", reference):
            ids = self.versions.data_version_ids(reference, limit=2)
            if len(ids) == 1:
                return ids[0]
            if ids:
                raise DataError(f"data version {reference!r} is ambiguous: "
                                f"{', '.join(ids)}, ...")
        name, _, tag = reference.partition("@")
        try:
            return self.versions.get_data_tag(name, tag or LATEST).data_version_id
        except NotFound:
            if self.names_a_version(reference):
                raise DataError(f"no version {name}@{tag or LATEST} (versions: "
                                f"{', '.join(self._names_of(name))})") from None
            raise DataError(f"data version {reference!r}: no stored id (give at least "
                            f"{MIN_PREFIX} characters), name or name@tag of that name (tags: "
                            f"{self._known_tags()})") from None

    def names_a_version(self, reference: str) -> bool:
        """Whether `reference` is `NAME` or `NAME@...` of a name that versions are stored
        under (rather than, say, a path)."""
        name, _, _ = reference.partition("@")
        return bool(_NAME.match(name)) and bool(self._names_of(name))

    def _names_of(self, name: str) -> list[str]:
        """`name`'s tags as references, the numbers in order, then the other tags."""
        tags = [t.tag for t in self.versions.list_data_tags() if t.name == name]
        numbers = sorted((t for t in tags if t.isdigit()), key=int)
        others = sorted(t for t in tags if not t.isdigit())
        return [f"{name}@{tag}" for tag in [*numbers, *others]]

    def manifest(self, version_id: str) -> Manifest:
        """The manifest of a snapshotted version; DataError when the version was only read by
        a run (it has no snapshot) or is unknown."""
        key = manifest_key(version_id)
        try:
            data = self.objects.read(key)
        except ObjectNotFound:
            try:
                self.versions.get_data_version(version_id)
            except NotFound:
                raise DataError(f"data version {version_id!r} is not stored") from None
            raise DataError(f"data version {version_id} was read by a run but never "
                            "snapshotted: `trainforge data snapshot SOURCE` stores its files"
                            ) from None
        return Manifest.from_json(data, self.objects.uri_of(key))

    def checkout(self, reference: str, dest: Path) -> Manifest:
        """Write the version's files into `dest` (missing or empty); see the module rules."""
        manifest = self.manifest(self.resolve(reference))
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise DataError(f"{dest}: expected an empty or missing folder to check out into")
        for entry in manifest.files:
            self._restore(entry, dest)
        return manifest

    def materialize(self, reference: str) -> tuple[str, Path]:
        """(version id, a folder holding exactly the version's files): its checkout under
        `checkout_cache/<id>`, made once and reused (a `.complete` marker, written last)."""
        if self.checkout_cache is None:
            raise DataError("this data repository has no checkout cache to read versions from")
        cache_root = self.checkout_cache
        version_id = self.resolve(reference)
        folder = cache_root / version_id
        if (folder / ".complete").exists():
            return version_id, folder
        manifest = self.manifest(version_id)
        building = Path(tempfile.mkdtemp(prefix=f".{version_id[:12]}-", dir=_made(cache_root)))
        try:
            for entry in manifest.files:
                self._restore(entry, building)
            (building / ".complete").write_text(version_id)
            try:
                os.rename(building, folder)
            except OSError:  # another process finished it first
                if not (folder / ".complete").exists():
                    raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
        return version_id, folder

    def diff(self, old: str, new: str) -> DataDiff:
        before = self.manifest(self.resolve(old))
        after = self.manifest(self.resolve(new))
        old_files = {f.name: f for f in before.files}
        new_files = {f.name: f for f in after.files}
        return DataDiff(
            before, after,
            added=tuple(f for name, f in new_files.items() if name not in old_files),
            removed=tuple(f for name, f in old_files.items() if name not in new_files),
            changed=tuple((old_files[name], f) for name, f in new_files.items()
                          if name in old_files and old_files[name].sha256 != f.sha256),
        )

    def tag(self, reference: str, name_at_tag: str) -> DataTag:
        name, at, tag = name_at_tag.partition("@")
        if not at:
            raise DataError(f"tag {name_at_tag!r}: expected NAME@TAG")
        check_name(name, "name")
        check_name(tag, "tag")
        if tag.isdigit():
            raise DataError(f"tag {name_at_tag!r}: a tag of digits is a version's number, "
                            "given by `data snapshot --name` and never moved")
        return self.versions.set_data_tag(name, tag, self.resolve(reference))

    def _measure_all(self, listing: SourceListing, pool: ThreadPoolExecutor,
                     uploads: _Uploads) -> list[tuple[str, int]]:
        """(sha256, rows) of each listed file, each object the store lacks staged in `uploads`:
        from the stat cache (this thread, which owns the cache's connection) when the file is
        unchanged, else read once in the pool to hash, count and stage it."""
        cache = self.hash_cache
        results: list[tuple[str, int] | None] = []
        known: dict[int, str] = {}  # hashed before, its rows not counted (a run's ingest)
        for index, file in enumerate(listing.files):
            hit = cache.lookup(file.path, file.stat) if cache is not None and \
                file.stat is not None else None  # a local file
            results.append(None if hit is None or hit[1] is None else (hit[0], hit[1]))
            if hit is not None and hit[1] is None:
                known[index] = hit[0]
        todo = [index for index, result in enumerate(results) if result is None]
        unread = [(listing.files[index], result[0]) for index, result in enumerate(results)
                  if result is not None and uploads.may_lack(result[0])]
        unchanged = []
        for index, (before, sha256, rows, after) in _in_tasks(
                pool, todo, lambda index: _measure(listing.files[index], uploads,
                                                   known.get(index))):
            results[index] = (sha256, rows)
            if before is not None and before == after:
                unchanged.append((listing.files[index].path, before, sha256, rows))
        for _ in _in_tasks(pool, unread, lambda hit: uploads.stage(*hit, None)):
            pass  # unchanged files whose objects the store lacks (a new store, a lost object)
        if cache is not None:
            cache.store_many(unchanged)
        return [result for result in results if result is not None]

    def _threads(self, listing: SourceListing) -> int:
        """`IO_THREADS` where reads or writes wait on a network; one per core where all is
        local (more only contend for the interpreter: 50,000 small files took 40% longer with
        8 threads than with 2 on 2 cores)."""
        remote = "://" in listing.files[0].path or self.objects.local_path() is None
        return IO_THREADS if remote else min(IO_THREADS, os.cpu_count() or 1)

    def _stored_hashes(self) -> set[str] | None:
        """The hashes of the objects a local store holds (one walk instead of a lookup per
        file); None for a remote store, where each file is looked up."""
        folder = self.objects.local_path(OBJECTS)
        if folder is None:
            return None
        if not folder.is_dir():
            return set()
        # names only, no stat per object: <objects>/<xx>/<sha256>
        return {entry.name for shard in os.scandir(folder) if shard.is_dir()
                for entry in os.scandir(shard.path) if entry.is_file()}

    def _restore(self, entry: ManifestEntry, dest: Path) -> None:
        target = dest / entry.name
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        digest = hashlib.sha256()
        with self.objects.open(object_key(entry.sha256)) as source, open(partial, "wb") as out:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != entry.sha256:
            partial.unlink()
            raise DataError(f"{self.objects.uri_of(object_key(entry.sha256))}: damaged: its "
                            f"bytes hash to {digest.hexdigest()}")
        os.replace(partial, target)

    def _known_tags(self) -> str:
        tags = self.versions.list_data_tags()
        return ", ".join(f"{t.name}@{t.tag}" for t in tags[:10]) or "none"


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a snapshot builds its records: a few per
    file, millions for a large source, none in a cycle, which it would scan again and again
    (a third of a no-op re-snapshot's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def object_key(sha256: str) -> str:
    return f"{OBJECTS}/{sha256[:2]}/{sha256}"


def manifest_key(version_id: str) -> str:
    return f"{MANIFESTS}/{version_id}.json"


def check_name(value: str, what: str) -> str:
    if not _NAME.match(value):
        raise DataError(f"data {what} {value!r}: expected letters, digits, '_', '.' or '-', "
                        "starting with a letter or digit")
    return value


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _measure(file: SourceFileInfo, uploads: _Uploads, known: str | None = None) -> tuple[
        tuple[int, int, int, int] | None, str, int, tuple[int, int, int, int] | None]:
    """(stat before, sha256, rows, stat after) of a file, its object staged if the store lacks
    it; the stats None for a remote file. A small local CSV file is read once for all three.
    `known`: its sha256, from the hash cache (only its rows are counted; its object, if
    staged, is checked against it as it streams)."""
    local = "://" not in file.path
    before = file.stat  # as listed: a change since the listing is a change, too
    rows: int | None = None
    data: bytes | None = None
    if known is not None:
        sha256 = known
    elif local and file.format == "csv" and file.compression is None and file.size <= _CHUNK:
        with open(file.path, "rb") as handle:
            data = handle.read()
        sha256 = hashlib.sha256(data).hexdigest()
        rows = csv_rows_without_parsing(data)
    else:
        _, sha256 = file_sha256(uploads.fs, file.path)
    if rows is None:
        rows = count_rows(uploads.fs, file)
    uploads.stage(file, sha256, data)
    return before, sha256, rows, stat_key(file.path) if local else None


def _in_tasks(pool: ThreadPoolExecutor, items: list[_Item],
              work: Callable[[_Item], _Result]) -> Iterator[tuple[_Item, _Result]]:
    """(item, work(item)) for each item, in order, run by the pool in tasks of several items
    (a task per item costs more than a small file's work) but enough tasks to keep every
    thread busy."""
    size = max(1, min(_TASK_ITEMS, len(items) // (4 * IO_THREADS)))
    tasks = [items[start:start + size] for start in range(0, len(items), size)]
    for task, results in zip(tasks, pool.map(lambda task: [work(item) for item in task], tasks),
                             strict=True):
        yield from zip(task, results, strict=True)


class _Uploads:
    """The objects a snapshot stages, each hash once: none the store holds (`stored`, the
    hashes a local store holds, read once; a remote store is asked per object)."""

    def __init__(self, objects: ObjectStore, batch: ObjectBatch, stored: set[str] | None,
                 fs: Any) -> None:
        self.objects = objects
        self.batch = batch
        self.stored = stored
        self.fs = fs
        self.count = 0
        self._claimed: set[str] = set()
        self._lock = threading.Lock()

    def may_lack(self, sha256: str) -> bool:
        return self.stored is None or sha256 not in self.stored

    def stage(self, file: SourceFileInfo, sha256: str, data: bytes | None) -> None:
        """Stage the object of `file` (its bytes `data`, else read again and checked against
        `sha256`) unless the store holds it or this snapshot staged it already."""
        if not self.may_lack(sha256):
            return
        with self._lock:
            if sha256 in self._claimed:
                return
            self._claimed.add(sha256)
        if self.stored is None and self.objects.exists(object_key(sha256)):
            return
        self.batch.write(object_key(sha256),
                         data if data is not None else _checked_chunks(self.fs, file, sha256))
        with self._lock:
            self.count += 1


def _checked_chunks(fs: Any, file: SourceFileInfo, sha256: str) -> Iterator[bytes]:
    """The file's bytes; at the end, DataError (and so no object) if they are not `sha256`."""
    digest = hashlib.sha256()
    handle: BinaryIO
    with fs.open(file.path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            yield chunk
    if digest.hexdigest() != sha256:
        raise DataError(f"{file.path}: changed while it was snapshotted; snapshot again")
