"""Which files a data source names, their format and compression, their hive partitions, and
their column names without their rows.

Rules:
- `source` is a local path, folder or glob (absolute, or relative to the working directory; `**`
  recurses), a `file://` URI, or a URL of an fsspec protocol (`s3://bucket/prefix/*.parquet`)
  opened with `storage_options`. Matching files are sorted by path.
- A folder means every data file below it (any depth) whose name does not start with `_` or `.`
  (`_SUCCESS`, `.crc` files), as Spark and Hive write them.
- Format by extension: `.parquet` / `.pq`, `.csv`, `.jsonl` / `.ndjson`, each CSV or JSON Lines
  file optionally compressed as `.gz`, `.zst` / `.zstd` or `.bz2`. An explicit format applies to
  every file (compression still follows the extension).
- Hive partitions: a folder named `key=value` between the source's fixed part (before its first
  glob character, or the folder itself) and a file makes `key` a column of that file's rows.
  Its type is int64 when every file's value is a whole number, else string;
  `__HIVE_DEFAULT_PARTITION__` is null.
- Nothing here imports pandas: `read_columns` is what `trainforge validate` uses to check the
  columns a spec names, and it reads a Parquet footer or the first block of a text file.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from stat import S_ISREG
from typing import Any, Literal, NamedTuple
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from trainforge.errors import DataError, DataNotFound
from trainforge.ingest._hashing import StatKey, stat_fields

Format = Literal["auto", "parquet", "csv", "jsonl"]
FileFormat = Literal["parquet", "csv", "jsonl"]
Compression = Literal["gzip", "zstd", "bz2"]

_FORMATS: dict[str, FileFormat] = {
    ".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
}
_COMPRESSIONS: dict[str, Compression] = {
    ".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2",
}
_GLOB_CHARS = re.compile(r"[*?\[]")
_PARTITION = re.compile(r"^([^=]+)=(.*)$")
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_EXPECTED = "expected .parquet, .pq, .csv, .jsonl or .ndjson (optionally .gz, .zst or .bz2)"


class SourceFileInfo(NamedTuple):  # a listing may hold millions: a tuple is made fastest
    """One file a source names, before it is read.

    `path` is what the file system calls it (an absolute local path, or `s3://bucket/key`);
    `name` is its path below the source's fixed folder (the folder itself, the folder part
    before a glob's first wildcard, or a file's folder), `/`-separated, so names say content
    and partition, not location; `partitions` are its hive `(column, value)` pairs, value None
    for the default partition; `stat` is a local file's (size, mtime ns, inode, ctime ns) when
    it was listed (what `HashCache` compares), None for a remote file.
    """

    path: str
    name: str
    size: int
    format: FileFormat
    compression: Compression | None
    partitions: tuple[tuple[str, str | None], ...] = ()
    stat: StatKey | None = None


@dataclass(frozen=True)
class SourceListing:
    """The files of a source, in path order, the file system they are read through, and the
    type of each partition column (int64 or string)."""

    source: str
    files: tuple[SourceFileInfo, ...]
    fs: Any
    partition_types: tuple[tuple[str, Literal["int64", "string"]], ...]

    def names(self) -> list[str]:
        return [file.name for file in self.files]

    def arrow_partition_types(self) -> dict[str, Any]:
        """Each partition column's Arrow type (`pyarrow.int64()` or `pyarrow.string()`)."""
        import pyarrow as pa

        return {name: pa.int64() if kind == "int64" else pa.string()
                for name, kind in self.partition_types}


def list_source_files(
    source: str, format: Format = "auto", storage_options: Mapping[str, Any] | None = None
) -> SourceListing:
    """The data files `source` names; DataNotFound when there is none, DataError for a file
    whose format is unknown or a protocol that cannot be opened."""
    fs, protocol, pattern = _filesystem(source, storage_options or {})
    found, base = _match(fs, protocol, pattern, source)
    files = []
    by_folder: dict[str, tuple[tuple[str, str | None], ...]] = {}
    by_suffixes: dict[str, tuple[FileFormat, Compression | None]] = {}
    for path, size, stat in found:
        suffixes = _suffixes(path)
        known = by_suffixes.get(suffixes)
        if known is None:
            known = by_suffixes[suffixes] = file_kind(path, format)
        kind, compression = known
        name = path[len(base):].replace(os.sep, "/").lstrip("/")
        folder = _parent(path)
        partitions = by_folder.get(folder)
        if partitions is None:
            partitions = by_folder[folder] = _partitions(folder, base)
        files.append(SourceFileInfo(path, name, size, kind, compression, partitions, stat))
    return SourceListing(source, tuple(files), fs, _partition_types(by_folder.values()))


def read_columns(
    source: str, format: Format = "auto", storage_options: Mapping[str, Any] | None = None
) -> tuple[str, list[str]]:
    """(path, column names) of the first file `source` names, in path order, hive partition
    columns last, without reading its rows (pandas index columns left out, as `read_table`
    leaves them). DataNotFound when nothing matches, DataError when the file cannot be read."""
    from trainforge.ingest._csv import header
    from trainforge.ingest._formats import file_schema, open_text

    listing = list_source_files(source, format, storage_options)
    first = listing.files[0]
    if first.format == "csv":
        names = header(lambda: open_text(listing.fs, first), first.path)
    else:
        names = file_schema(listing.fs, first).names
    return first.path, [*names, *(name for name, _ in first.partitions)]


def file_kind(path: str, format: Format) -> tuple[FileFormat, Compression | None]:
    """(format, compression) of a file, by its extension unless `format` names one."""
    stem, suffix = os.path.splitext(path.lower())
    compression = _COMPRESSIONS.get(suffix)
    if compression is not None:
        suffix = os.path.splitext(stem)[1]
    if format != "auto":
        kind: FileFormat = format
    elif suffix in _FORMATS:
        kind = _FORMATS[suffix]
    else:
        raise DataError(
            f"{path}: unknown file extension {suffix!r}; {_EXPECTED}, or set format to "
            "'parquet', 'csv' or 'jsonl'"
        )
    if kind == "parquet" and compression is not None:
        raise DataError(f"{path}: a parquet file is compressed inside; expected no "
                        f"{os.path.splitext(path)[1]} suffix")
    return kind, compression


def _suffixes(path: str) -> str:
    """The part of a file name `file_kind` decides by: from the first dot after any leading
    dots (`.parquet`, `.2024.csv.gz`), or "" when there is none."""
    name = path[max(path.rfind("/"), path.rfind(os.sep)) + 1:].lstrip(".")
    dot = name.find(".")
    return name[dot:] if dot >= 0 else ""


def _filesystem(source: str, options: Mapping[str, Any]) -> tuple[Any, str, str]:
    """(fsspec file system, protocol, path or pattern as that file system names it)."""
    import fsspec

    if source.startswith("file://"):
        parts = urlsplit(source)
        if parts.netloc not in ("", "localhost"):
            raise DataError(f"data source {source!r}: expected file:///<absolute path>")
        return fsspec.filesystem("file"), "file", url2pathname(parts.path)
    if "://" not in source:
        return fsspec.filesystem("file"), "file", os.path.abspath(source)
    protocol = source.split("://", 1)[0]
    if protocol not in fsspec.available_protocols():
        raise DataError(f"data source {source!r}: unknown protocol {protocol!r}; expected a "
                        "local path, file:// or an fsspec URL such as s3://bucket/prefix")
    try:
        fs = fsspec.filesystem(protocol, **dict(options))
    except ImportError as exc:
        raise DataError(f"data source {source!r}: protocol {protocol!r} needs a package that "
                        f"is not installed ({exc}); for s3:// pip install 'trainforge[s3]'"
                        ) from None
    except TypeError as exc:
        raise DataError(f"data source {source!r}: storage options {sorted(options)} refused: "
                        f"{exc}") from None
    return fs, protocol, fs._strip_protocol(source)


def _match(fs: Any, protocol: str, pattern: str,
           source: str) -> tuple[list[tuple[str, int, StatKey | None]], str]:
    """((path, size, local stat) of each data file, sorted; the fixed folder partitions are
    read below)."""
    where = "" if "://" in source or os.path.isabs(source) else f" (relative to {os.getcwd()})"
    local = protocol == "file"
    if not local:
        fs.invalidate_cache()  # another process may have written since the last listing
    found: list[tuple[str, int, StatKey | None]]
    try:
        if _GLOB_CHARS.search(pattern):
            base = _fixed_folder(pattern)
            if local:
                found = _local_matches(sorted(glob.glob(pattern, recursive=True)))
            else:
                found = [(p, _size(fs, p), None) for p in sorted(fs.glob(pattern))
                         if fs.isfile(p)]
        elif fs.isdir(pattern):
            base = pattern.rstrip("/")
            if local:
                found = sorted(_local_files(pattern))
            else:
                found = sorted((path, int(info["size"]), None) for path, info in
                               fs.find(pattern, detail=True).items()
                               if info.get("type") == "file" and _is_data_file(path, base))
            if not found:
                raise DataNotFound(f"data source {source!r}{where} is a folder holding no file "
                                   "(names starting with _ or . are skipped)")
        elif fs.isfile(pattern):
            base = _parent(pattern)
            found = _local_matches([pattern]) if local else [(pattern, _size(fs, pattern), None)]
        else:
            found, base = [], pattern
    except (PermissionError, OSError) as exc:
        if isinstance(exc, DataNotFound):
            raise
        raise DataError(f"data source {source!r}: cannot list it: {exc}") from None
    except Exception as exc:  # a remote file system's client errors are its own (botocore's)
        if local:
            raise
        raise DataError(f"data source {source!r}: cannot list it: {type(exc).__name__}: "
                        f"{exc}") from None
    if not found:
        raise DataNotFound(f"data source {source!r} matches no file{where}")
    if local:
        return found, base
    return [(f"{protocol}://{path}", size, None) for path, size, _ in found], \
        f"{protocol}://{base}"


def _local_matches(paths: Iterable[str]) -> list[tuple[str, int, StatKey | None]]:
    """(path, size, stat) of each path that is a regular file (links followed); directories
    and broken links left out."""
    found: list[tuple[str, int, StatKey | None]] = []
    for path in paths:
        try:
            stat = os.stat(path)
        except FileNotFoundError:  # a broken link
            continue
        if S_ISREG(stat.st_mode):
            found.append((path, stat.st_size, stat_fields(stat)))
    return found


def _local_files(folder: str) -> list[tuple[str, int, StatKey]]:
    """(path, size, stat) of every data file below a local folder (symbolic links followed,
    as fsspec's `find` does; names starting with `_` or `.` skipped, folders included); one
    `scandir` per folder and one stat per file."""
    found = []
    pending = [folder]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.name.startswith(("_", ".")):
                    continue
                if entry.is_dir():
                    pending.append(entry.path)
                elif entry.is_file():
                    stat = entry.stat()
                    found.append((entry.path, stat.st_size, stat_fields(stat)))
    return found


def _size(fs: Any, path: str) -> int:
    return int(fs.size(path))


def _fixed_folder(pattern: str) -> str:
    """The folder part of `pattern` before its first glob character."""
    head = pattern[: _GLOB_CHARS.search(pattern).start()]  # type: ignore[union-attr]
    return head.rsplit("/", 1)[0] if "/" in head else head.rsplit(os.sep, 1)[0]


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else os.path.dirname(path)


def _is_data_file(path: str, base: str) -> bool:
    relative = path[len(base):].strip("/").split("/")
    return not any(part.startswith(("_", ".")) for part in relative)


def _partitions(folder: str, base: str) -> tuple[tuple[str, str | None], ...]:
    """The hive (column, value) pairs of the folders between `base` and `folder`."""
    pairs = []
    for name in folder[len(base):].replace(os.sep, "/").split("/"):
        match = _PARTITION.match(name)
        if match:
            value = unquote(match.group(2))
            pairs.append((unquote(match.group(1)), None if value == _HIVE_NULL else value))
    return tuple(pairs)


def _partition_types(
    folders: Iterable[tuple[tuple[str, str | None], ...]],
) -> tuple[tuple[str, Literal["int64", "string"]], ...]:
    """Each partition column's type over the partitions of every folder holding a file."""
    values: dict[str, list[str]] = {}
    for partitions in folders:
        for name, value in partitions:
            values.setdefault(name, []).extend([] if value is None else [value])
    whole = re.compile(r"^-?\d{1,18}$")
    return tuple((name, "int64" if all(whole.match(v) for v in found) else "string")
                 for name, found in values.items())
