"""Objects behind an fsspec URL: `s3://bucket/prefix` through s3fs, or any fsspec protocol.

A write streams into one upload that becomes an object only when it completes (a multipart
upload for big objects); on failure the upload is discarded and never closed, since closing
would publish the part written so far. That is how the write handles of object stores work in
fsspec (`AbstractBufferedFile`: S3, GCS, Azure Blob); other file systems get the same calls and
only their own guarantees. Listings and lookups drop fsspec's cached listings first, since
another process may have written.

Credentials and endpoint come from `storage_options` (passed to the file system, e.g.
`{"client_kwargs": {"endpoint_url": ...}}`) or the file system's own configuration; for S3 the
AWS variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`,
`AWS_DEFAULT_REGION`, `AWS_PROFILE`) or fsspec's `FSSPEC_S3_<OPTION>` variables.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO

from trainforge.errors import ObjectStoreError
from trainforge.storage.objects._base import Chunk, GuardedObjectStore

INSTALL = "pip install 'trainforge[s3]'"


class FsspecObjectStore(GuardedObjectStore):
    """Objects under `<protocol>://<bucket or host>/<prefix>`."""

    def __init__(self, location: str, storage_options: Mapping[str, Any] | None = None) -> None:
        protocol, _, rest = location.partition("://")
        if not rest.strip("/"):
            raise ObjectStoreError(
                f"object store location {location!r}", f"expected {protocol}://<bucket>/<prefix>"
            )
        self.fs: Any = _filesystem(protocol, location, dict(storage_options or {}))
        self.root_uri = f"{protocol}://{rest.strip('/')}"
        self._base: str = self.fs._strip_protocol(self.root_uri).rstrip("/")

    def _path(self, key: str) -> str:
        return f"{self._base}/{key}" if key else self._base

    def _list(self, prefix: str) -> dict[str, int]:
        folder = self._path(prefix)
        self.fs.invalidate_cache(folder)
        try:
            found = self.fs.find(folder, detail=True)
        except FileNotFoundError:
            return {}
        start = f"{self._base}/"
        return {
            name.removeprefix(start): int(info["size"])
            for name, info in found.items()
            if name.startswith(f"{folder}/") and info.get("type") != "directory"
        }

    def _write(self, key: str, chunks: Iterator[Chunk]) -> None:
        out = self.fs.open(self._path(key), "wb")
        try:
            for chunk in chunks:
                out.write(chunk)
        except BaseException:
            out.discard()
            out.closed = True  # close(), also run at garbage collection, would publish the part
            raise
        out.close()

    def _open(self, key: str) -> BinaryIO:
        self.fs.invalidate_cache(self._path(key))
        file: BinaryIO = self.fs.open(self._path(key), "rb")
        return file

    def _read(self, key: str) -> bytes:
        self.fs.invalidate_cache(self._path(key))
        return bytes(self.fs.cat_file(self._path(key)))

    def _size(self, key: str) -> int:
        self.fs.invalidate_cache(self._path(key))
        info = self.fs.info(self._path(key))
        if info.get("type") != "file":
            raise IsADirectoryError(f"{self.uri_of(key)} is a prefix, not an object")
        return int(info["size"])

    def _delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._path(key))
        self.fs.invalidate_cache(self._path(key))

    def _delete_prefix(self, prefix: str) -> None:
        found = self._list(prefix)
        if found:
            self.fs.rm([self._path(key) for key in found])
        self.fs.invalidate_cache(self._path(prefix))

    def _uri(self, key: str) -> str:
        return f"{self.root_uri}/{key}" if key else self.root_uri


def _filesystem(protocol: str, location: str, options: dict[str, Any]) -> Any:
    """The fsspec file system for `protocol`; `ObjectStoreError` saying what to install or
    which protocols there are."""
    where = f"object store location {location!r}"
    try:
        import fsspec
    except ImportError as exc:
        raise ObjectStoreError(where, f"fsspec URLs need fsspec: {INSTALL}") from exc
    known = fsspec.available_protocols()
    if protocol not in known:
        raise ObjectStoreError(
            where,
            f"unknown protocol {protocol!r}; expected a local path, a file:// URI or a URL of "
            f"an fsspec protocol ({', '.join(sorted(known))})",
        )
    try:
        return fsspec.filesystem(protocol, **options)
    except ImportError as exc:
        raise ObjectStoreError(
            where, f"protocol {protocol!r} needs a package that is not installed ({exc}); for "
            f"s3:// {INSTALL}"
        ) from exc
    except TypeError as exc:
        raise ObjectStoreError(where, f"storage options {sorted(options)} refused: {exc}") from exc
