"""A data source's file system opened again where a stored value names it, with the storage
options the decoding process's session gives for the source.

The value store keeps a listing's source and the names of the options it was opened with,
never their values: they may be credentials (`data.storage_options.secret`), and an
endpoint names a deployment. A listing decoded from the value store (a resumed run's plan, a
cached step's, the dataset launched workers read) reopens its file system with the options
its decoding session's `Credentials` give for the source (`reopen_filesystem`): a pipeline run
of a spec, and each of its torchrun workers, have its `data.storage_options` there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainforge.config import Credentials
from trainforge.errors import DataError
from trainforge.ingest._sources import _filesystem


def reopen_filesystem(source: str, option_names: Sequence[str], credentials: Credentials) -> Any:
    """The file system of `source`, which was listed with options named `option_names`:
    opened with the options `credentials` give for it, or with none when it needed none.
    `DataError` when it needed options and none are given."""
    options = credentials.options_for(source)
    if options is None and option_names:
        raise DataError(
            f"data source {source!r} was listed with storage options ({', '.join(option_names)}), "
            "which the value store does not keep: read it back in a session given them (a "
            "pipeline run of a spec whose data.storage_options give them)")
    fs, _, _ = _filesystem(source, options or {})
    return fs


def option_names(fs: Any) -> list[str]:
    """The names of the options `fs` was opened with (fsspec's `storage_options`), sorted."""
    return sorted(getattr(fs, "storage_options", None) or {})
