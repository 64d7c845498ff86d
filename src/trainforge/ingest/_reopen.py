"""The storage options a process holds for a data source, so that what was listed or read
from it comes back from the value store able to read the source again.

The value store keeps a listing's source and the names of the options it was opened with,
never their values: they may be credentials (`data.storage_options.secret`), and an
endpoint names a deployment. A process that runs a spec holds its `data.storage_options` for
its `data.source` (`holding_storage_options`) while it executes the pipeline, as a pipeline
run's process and each torchrun worker do. Inside, a listing decoded from the value store (a
resumed run's plan, a cached step's, the dataset launched workers read) reopens its file
system with them (`reopen_filesystem`).

What is held is process-wide, not per thread, so the threads a runner runs steps on see it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from trainforge.errors import DataError
from trainforge.ingest._sources import _filesystem

_LOCK = threading.Lock()
_HELD: dict[str, list[dict[str, Any]]] = {}


@contextmanager
def holding_storage_options(source: str, options: Mapping[str, Any]) -> Iterator[None]:
    """While inside, `source` reopens with `options` (nested holds of one source: the
    innermost one)."""
    with _LOCK:
        _HELD.setdefault(source, []).append(dict(options))
    try:
        yield
    finally:
        with _LOCK:
            held = _HELD[source]
            held.pop()
            if not held:
                del _HELD[source]


def reopen_filesystem(source: str, option_names: Sequence[str]) -> Any:
    """The file system of `source`, which was listed with options named `option_names`:
    opened with the options held for it, or with none when it needed none. `DataError` when
    it needed options and none are held."""
    with _LOCK:
        held = _HELD.get(source)
        options = held[-1] if held else None
    if options is None and option_names:
        raise DataError(
            f"data source {source!r} was listed with storage options ({', '.join(option_names)}), "
            "which the value store does not keep: read it back inside a pipeline run of a spec "
            "whose data.storage_options give them")
    fs, _, _ = _filesystem(source, options or {})
    return fs


def option_names(fs: Any) -> list[str]:
    """The names of the options `fs` was opened with (fsspec's `storage_options`), sorted."""
    return sorted(getattr(fs, "storage_options", None) or {})
