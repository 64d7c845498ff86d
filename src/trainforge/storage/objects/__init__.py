"""One object store under artifacts and checkpoints: a local folder or any fsspec URL.

    >>> import tempfile
    >>> store = open_object_store(tempfile.mkdtemp())
    >>> store.write("run1/report.json", b"{}")
    >>> store.list("run1"), store.read("run1/report.json")
    ({'run1/report.json': 2}, b'{}')

See `ObjectStore` for the rules every implementation keeps.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from trainforge.config import ARTIFACT_PROXY_PATH
from trainforge.errors import ObjectStoreError
from trainforge.storage.objects._base import (
    GuardedObjectStore,
    ObjectBatch,
    ObjectStore,
    check_key,
)
from trainforge.storage.objects._fsspec import FsspecObjectStore
from trainforge.storage.objects._local import LocalObjectStore

__all__ = [
    "FsspecObjectStore",
    "GuardedObjectStore",
    "LocalObjectStore",
    "ObjectBatch",
    "ObjectStore",
    "check_key",
    "open_object_store",
]


def open_object_store(
    location: str | Path, storage_options: Mapping[str, Any] | None = None
) -> ObjectStore:
    """The object store at `location`, chosen by scheme.

    A path or `file:///path` is a local folder; `http(s)://[:TOKEN@]host:port/api/v1/objects
    [/prefix]` the artifact root of `trainforge server` through its proxy (the token may be
    the `token` storage option instead); any other `<protocol>://...` (`s3://bucket/
    prefix`, `gs://...`) goes through fsspec with `storage_options` (ignored for a local
    folder). An unknown protocol or a missing package raises `ObjectStoreError` saying what is
    accepted or what to install.
    """
    text = str(location)
    if text.startswith("file://"):
        return LocalObjectStore(_file_uri_path(text))
    if _is_proxy_location(text):
        from trainforge.storage.objects._http import HttpObjectStore  # httpx, on first use

        return HttpObjectStore(text, storage_options)
    if "://" in text:
        return FsspecObjectStore(text, storage_options)
    return LocalObjectStore(text)


def _file_uri_path(uri: str) -> Path:
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost") or not parts.path:
        raise ObjectStoreError(
            f"object store location {uri!r}", "expected file:///<absolute path on this machine>"
        )
    if os.name == "nt":  # drive letters: the standard library's rules
        from urllib.request import url2pathname

        return Path(url2pathname(parts.path))
    return Path(unquote(parts.path))  # url2pathname on POSIX, without urllib.request's imports


def _is_proxy_location(location: str) -> bool:
    """Whether `location` names `trainforge server`'s artifact proxy, or a folder in it."""
    if not location.startswith(("http://", "https://")):
        return False
    path = urlsplit(location).path.rstrip("/")
    return path == ARTIFACT_PROXY_PATH or path.startswith(ARTIFACT_PROXY_PATH + "/")
