"""File checksums that are computed while writing and verified on every core.

A file's checksum is the hash of the concatenated digests of its fixed-size chunks (the last one
may be shorter; an empty file has one empty chunk). Writing feeds the bytes through
`ChunkedHasher` as they stream out; verifying hashes the chunks in parallel, since the hash
functions release the GIL: loading a checkpoint then costs little more than reading it.

xxh3-128 is the default: measured at about 9-20 GB/s per core against 1.2 GB/s for SHA-256,
which would add about a second to the save of a 1.2 GB state. It guards against torn writes,
truncation and bit rot, not against a deliberate forger; loading never runs code in any case.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import xxhash


class _Hash(Protocol):
    """What xxhash's and hashlib's hash objects have in common."""

    def update(self, data: memoryview | bytes, /) -> None: ...

    def digest(self) -> bytes: ...

    def hexdigest(self) -> str: ...


HASHES: dict[str, Callable[..., _Hash]] = {"xxh3_128": xxhash.xxh3_128, "sha256": hashlib.sha256}
DEFAULT_HASH = "xxh3_128"
CHUNK_BYTES = 64 << 20


class ChunkedHasher:
    """The checksum of bytes fed in pieces of any size (not thread-safe)."""

    def __init__(self, algorithm: str = DEFAULT_HASH, chunk_bytes: int = CHUNK_BYTES) -> None:
        self._new = HASHES[algorithm]
        self._chunk_bytes = chunk_bytes
        self._current = self._new()
        self._filled = 0
        self._digests: list[bytes] = []
        self.size = 0

    def update(self, data: memoryview | bytes) -> None:
        view = memoryview(data).cast("B")
        while view.nbytes:
            take = min(self._chunk_bytes - self._filled, view.nbytes)
            self._current.update(view[:take])
            self._filled += take
            self.size += take
            view = view[take:]
            if self._filled == self._chunk_bytes:
                self._digests.append(self._current.digest())
                self._current, self._filled = self._new(), 0

    def hexdigest(self) -> str:
        last = [self._current.digest()] if self._filled or not self._digests else []
        return self._new(b"".join(self._digests + last)).hexdigest()


def checksum(data: memoryview | bytes, algorithm: str, chunk_bytes: int) -> str:
    """The checksum `ChunkedHasher` gives for `data`, its chunks hashed on all cores."""
    view = memoryview(data).cast("B")
    chunks = [view[i : i + chunk_bytes] for i in range(0, view.nbytes, chunk_bytes)] or [view]
    new = HASHES[algorithm]
    workers = min(len(chunks), os.cpu_count() or 1)
    if workers == 1:
        digests = [new(chunk).digest() for chunk in chunks]
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="trainforge-verify") as pool:
            digests = list(pool.map(lambda chunk: new(chunk).digest(), chunks))
    return new(b"".join(digests)).hexdigest()
