"""The object store contract: bytes under keys, in a local folder or behind any fsspec URL.

Artifacts, checkpoints, data snapshots and the value store are key layouts over it.

Rules:
- a key is a relative POSIX path of non-empty segments (`run1/model/weights.safetensors`): no
  leading '/', no backslash or NUL, and no segment starting with '.' (so no '.' or '..'; such
  names are the store's temporary files). A bad key is refused with `ObjectStoreError` naming
  it before anything is written. A prefix is a key, or "" for the whole store, and stands for
  the objects below it (`<prefix>/...`), never for an object named `<prefix>` itself;
- `write` is atomic and durable: readers see the old object or the whole new one, never a part;
  when it returns, the object survives a crash; if it fails or the process dies, no object of
  that name appears. A local folder may keep a temporary file `.<name>.<random>.tmp` beside the
  target after a kill: listings skip it unless `include_temporary=True` (so a key layout can find
  and remove what a killed writer left), and `delete_prefix` removes it;
- an error raised by what `write` was given (its iterator or file object) propagates as it is;
  a failure of storage becomes `ObjectStoreError` naming the object's URI, and a missing object
  `ObjectNotFound`. A file object `open` returns raises `OSError` from its own reads;
- `batch()` stages many writes, from any number of threads, and publishes them when its block
  ends: each object atomic as `write` makes it, all durable together (a local folder flushes
  twice for any number of objects), none published when the block raises (a store whose
  writes cannot be staged, such as S3, has stored each one as it was written);
- deleting what is already gone is not an error, so every deletion can be retried;
- one writer per key, any number of readers. Instances hold no per-call state and are safe to
  share across threads.

`ObjectStore` is the contract (a Protocol: what key layouts are typed on); `GuardedObjectStore`
is the base of the implementations. It holds the guards (key checks, error translation,
listing filters); the implementations fill in the `_` hooks, which raise `OSError`
(`FileNotFoundError` for a missing object) and see only checked keys.
"""

from __future__ import annotations

import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypeVar

from trainforge.errors import ObjectNotFound, ObjectStoreError

Chunk = bytes | bytearray | memoryview
Source = Chunk | Iterable[Chunk] | BinaryIO
READ_CHUNK_BYTES = 1 << 20
_Stored = TypeVar("_Stored")
_EXPECTED = (
    "expected a relative path of non-empty segments separated by '/', none starting with '.', "
    "without '\\' or NUL"
)


def check_key(key: str, *, prefix: bool = False) -> str:
    """`key` unchanged if it is a valid key (with `prefix`, a valid prefix: a key or "");
    else `ObjectStoreError` naming it and saying what was expected."""
    if prefix and key == "":
        return key
    if not isinstance(key, str) or not _valid(key):
        what = "object prefix" if prefix else "object key"
        raise ObjectStoreError(f"{what} {key!r}", _EXPECTED)
    return key


def _valid(key: str) -> bool:
    segments = key.split("/")
    return (
        "\\" not in key
        and "\0" not in key
        and all(segment and not segment.startswith(".") for segment in segments)
    )


class ObjectBatch(Protocol):
    """Writes staged by `ObjectStore.batch()`, published when its block ends."""

    def write(self, key: str, data: Source) -> None: ...


class ObjectStore(Protocol):
    """Objects under one root, with the rules of the module docstring."""

    @property
    def root_uri(self) -> str: ...

    def list(self, prefix: str = "", *, include_temporary: bool = False) -> dict[str, int]: ...

    def write(self, key: str, data: Source) -> None: ...

    def batch(self) -> AbstractContextManager[ObjectBatch]: ...

    def open(self, key: str) -> BinaryIO: ...

    def read(self, key: str) -> bytes: ...

    def size(self, key: str) -> int: ...

    def exists(self, key: str) -> bool: ...

    def delete(self, key: str) -> None: ...

    def delete_prefix(self, prefix: str) -> None: ...

    def uri_of(self, key: str) -> str: ...

    def local_path(self, key: str = "") -> Path | None: ...


class GuardedObjectStore(ABC):
    """An `ObjectStore` implementation's base: guards in the public methods, storage in the
    `_` hooks."""

    root_uri: str

    def list(self, prefix: str = "", *, include_temporary: bool = False) -> dict[str, int]:
        """Size in bytes of every object under `prefix` (all of them for ""), by key, sorted.

        With `include_temporary`, temporary files that writes in progress or killed writers
        left are listed too, under their own names (which are not valid keys).
        """
        check_key(prefix, prefix=True)
        with self._failures(prefix, "list"):
            found = self._list(prefix)
        return {
            key: size
            for key, size in sorted(found.items())
            if _listed(key, include_temporary)
        }

    def write(self, key: str, data: Source) -> None:
        """Store `data` under `key`, atomically and durably, replacing any object there.

        `data` is bytes, an iterable of bytes-like chunks (read once, in order) or a binary file
        object (read to its end from where it stands; the caller closes it).
        """
        self._storing(key, data, self._write)

    @contextmanager
    def batch(self) -> Iterator[ObjectBatch]:
        """Writes staged in the block (`batch.write(key, data)`, from any thread), published
        all at once when it ends; see the module rules. Nothing staged is published if the
        block raises."""
        staging = _Staging(self)
        try:
            yield staging
            if staging.staged:  # nothing new: no file-system flush
                with self._failures("", "write"):
                    self._commit(staging.staged)
        except BaseException:
            self._discard(staging.staged)  # those published are gone from their staged names
            raise

    def open(self, key: str) -> BinaryIO:
        """A binary file object reading the object from its start; close it after use."""
        check_key(key)
        with self._failures(key, "read"):
            return self._open(key)

    def read(self, key: str) -> bytes:
        """The whole object."""
        check_key(key)
        with self._failures(key, "read"):
            return self._read(key)

    def size(self, key: str) -> int:
        """The object's size in bytes; `ObjectNotFound` when there is none."""
        check_key(key)
        with self._failures(key, "stat"):
            return self._size(key)

    def exists(self, key: str) -> bool:
        """Whether an object is stored under `key`."""
        try:
            self.size(key)
        except ObjectNotFound:
            return False
        return True

    def delete(self, key: str) -> None:
        """Remove the object (absent is fine)."""
        check_key(key)
        with self._failures(key, "delete"):
            self._delete(key)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object under `prefix` and any temporary file among them (absent is
        fine). `prefix` must not be empty: the whole store is never deleted at once."""
        check_key(prefix)
        with self._failures(prefix, "delete"):
            self._delete_prefix(prefix)

    def uri_of(self, key: str) -> str:
        """The URI of an object or prefix ("" gives `root_uri`)."""
        check_key(key, prefix=True)
        return self._uri(key)

    def local_path(self, key: str = "") -> Path | None:
        """The file (or, for a prefix, the folder) of `key` on this machine; None when the
        store is not a local folder. Readers may use it for fast paths such as mmap."""
        check_key(key, prefix=True)
        return self._local_path(key)

    def _storing(self, key: str, data: Source,
                 hook: Callable[[str, Iterator[Chunk]], _Stored]) -> _Stored:
        """`hook(key, chunks of data)` (`_write` or `_stage`) for a checked key: an error of
        `data` itself propagates as it is, a failure of storage is `ObjectStoreError`."""
        check_key(key)
        source = _Source(data)
        try:
            return hook(key, iter(source))
        except OSError as exc:
            if exc is source.error:
                raise
            raise ObjectStoreError(self.uri_of(key), f"cannot write: {exc}") from exc

    @contextmanager
    def _failures(self, key: str, doing: str) -> Iterator[None]:
        """Storage failures as `ObjectStoreError` naming the URI of `key`."""
        try:
            yield
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise ObjectNotFound(self.uri_of(key), "not found") from exc
        except OSError as exc:
            raise ObjectStoreError(self.uri_of(key), f"cannot {doing}: {exc}") from exc

    @abstractmethod
    def _list(self, prefix: str) -> dict[str, int]:
        """Every file under `prefix`, temporary ones included; a missing prefix gives {}."""

    @abstractmethod
    def _write(self, key: str, chunks: Iterator[Chunk]) -> None: ...

    def _stage(self, key: str, chunks: Iterator[Chunk]) -> Any:
        """A batch's first half for one object; what `_commit` needs of it. Here: the
        whole write (stores without a cheaper batch)."""
        self._write(key, chunks)

    def _commit(self, staged: Sequence[Any]) -> None:
        """Make every staged object visible and durable (here: each was, when staged)."""
        return None

    def _discard(self, staged: Sequence[Any]) -> None:
        """Remove what `_stage` left for objects never committed (here: nothing)."""
        return None

    @abstractmethod
    def _open(self, key: str) -> BinaryIO: ...

    @abstractmethod
    def _read(self, key: str) -> bytes: ...

    @abstractmethod
    def _size(self, key: str) -> int: ...

    @abstractmethod
    def _delete(self, key: str) -> None: ...

    @abstractmethod
    def _delete_prefix(self, prefix: str) -> None: ...

    @abstractmethod
    def _uri(self, key: str) -> str: ...

    def _local_path(self, key: str) -> Path | None:
        return None


def _listed(key: str, include_temporary: bool) -> bool:
    """Whether a listing shows `key`: never inside a '.' folder, a '.' file only on request."""
    *folders, name = key.split("/")
    if any(folder.startswith(".") for folder in folders):
        return False
    return include_temporary or not name.startswith(".")


class _Staging:
    """The writes of one `batch()`: each staged as it is written, thread-safe."""

    def __init__(self, store: GuardedObjectStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self.staged: list[Any] = []

    def write(self, key: str, data: Source) -> None:
        staged = self._store._storing(key, data, self._store._stage)
        with self._lock:
            self.staged.append(staged)


class _Source:
    """The chunks of what `write` was given, remembering an error raised while reading it, so
    that `write` can tell it from a failure of storage."""

    def __init__(self, data: Source) -> None:
        self._data = data
        self.error: Exception | None = None

    def __iter__(self) -> Iterator[Chunk]:
        try:
            yield from _chunks(self._data)
        except Exception as exc:
            self.error = exc
            raise


def _chunks(data: Source) -> Iterable[Chunk]:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return [data]
    read = getattr(data, "read", None)
    if callable(read):
        return iter(functools.partial(read, READ_CHUNK_BYTES), b"")
    return data
