"""Sources: folders, globs, file:// and s3:// URLs; CSV, Parquet and JSON Lines, compressed or
not; hive partitions as columns; streamed as record batches that know their file lines."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainforge.errors import DataError, DataNotFound
from trainforge.ingest import iter_batches, list_source_files, read_columns, read_table
from trainforge.ingest._hashing import stat_key
from trainforge.ingest._sources import file_kind


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_jsonl_rows_are_located_at_their_lines_blank_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"a": 1, "b": "x"}\n\n{"a": 2, "b": "y"}\n{"a": 3, "b": null}\n')

    result = read_table(str(path))

    assert result.frame["a"].tolist() == [1, 2, 3]
    assert result.frame["b"].tolist()[:2] == ["x", "y"] and pd.isna(result.frame["b"].iloc[2])
    assert [result.locate(i) for i in range(3)] == [
        "events.jsonl line 1 (row 1)", "events.jsonl line 3 (row 2)", "events.jsonl line 4 (row 3)"]


@pytest.mark.parametrize(("suffix", "compress"), [
    (".csv.gz", gzip.compress), (".csv.bz2", bz2.compress), (".csv.zst", None)])
def test_compressed_csv_reads_like_plain_and_hashes_the_stored_bytes(
    tmp_path: Path, suffix: str, compress: Any
) -> None:
    text = b"amount,kind\n1.5,a\n\n2.5,b\n"
    if compress is None:
        codec = pa.Codec("zstd")
        compress = lambda data: codec.compress(data, asbytes=True)  # noqa: E731
    path = tmp_path / f"rows{suffix}"
    path.write_bytes(compress(text))

    result = read_table(str(path))

    assert result.frame.to_dict("list") == {"amount": [1.5, 2.5], "kind": ["a", "b"]}
    (file,) = result.files
    assert file.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert file.format == "csv" and file.compression is not None
    assert result.locate(1) == f"rows{suffix} line 4 (row 2)"


def test_gzipped_jsonl_and_explicit_format_with_compression(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(_jsonl([{"v": 1}, {"v": 2}]).encode()))
    (tmp_path / "b.log.gz").write_bytes(gzip.compress(_jsonl([{"v": 3}]).encode()))

    assert read_table(str(tmp_path / "a.jsonl.gz")).frame["v"].tolist() == [1, 2]
    assert read_table(str(tmp_path / "b.log.gz"), format="jsonl").frame["v"].tolist() == [3]


def test_a_folder_reads_every_data_file_below_it_and_skips_marker_files(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    pd.DataFrame({"x": [1, 2]}).to_parquet(tmp_path / "a" / "part-0.parquet")
    pd.DataFrame({"x": [3]}).to_parquet(tmp_path / "part-1.parquet")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / "a" / ".part-0.parquet.crc").write_text("crc")
    (tmp_path / "_temporary" / "0").mkdir(parents=True)  # a writer's unfinished output
    pd.DataFrame({"x": [9]}).to_parquet(tmp_path / "_temporary" / "0" / "part-2.parquet")

    result = read_table(str(tmp_path))

    assert [Path(f.path).name for f in result.files] == ["part-0.parquet", "part-1.parquet"]
    assert result.frame["x"].tolist() == [1, 2, 3]


def test_each_listed_file_has_the_format_of_its_own_name_and_its_stat(tmp_path: Path) -> None:
    names = ["a.csv", "b.CSV.GZ", "c.v2.jsonl", "d.ndjson.zst", "e.pq", "f.2024.csv.bz2",
             "g.parquet"]
    for name in names:
        (tmp_path / name).write_bytes(b"")

    listing = list_source_files(str(tmp_path))

    assert [(Path(f.path).name, f.format, f.compression) for f in listing.files] == [
        (name, *file_kind(str(tmp_path / name), "auto")) for name in names]
    assert [f.stat for f in listing.files] == [stat_key(str(tmp_path / n)) for n in names]
    assert [(f.format, f.compression) for f in listing.files] == [
        ("csv", None), ("csv", "gzip"), ("jsonl", None), ("jsonl", "zstd"), ("parquet", None),
        ("csv", "bz2"), ("parquet", None)]


def test_file_uri_reads_like_a_path(tmp_path: Path) -> None:
    pd.DataFrame({"x": [1.0]}).to_parquet(tmp_path / "one.parquet")

    result = read_table(f"file://{tmp_path}/*.parquet")

    assert result.frame["x"].tolist() == [1.0]
    assert result.files[0].path == str(tmp_path / "one.parquet")


def _write_partitions(root: Path) -> None:
    for day, hour, values in [("2024-01-01", 1, [1.0, 2.0]), ("2024-01-02", 2, [3.0]),
                              ("__HIVE_DEFAULT_PARTITION__", 3, [4.0])]:
        folder = root / f"date={day}" / f"hour={hour}"
        folder.mkdir(parents=True)
        pd.DataFrame({"amount": values}).to_parquet(folder / "part-0.parquet")


def test_hive_partition_folders_become_typed_columns(tmp_path: Path) -> None:
    _write_partitions(tmp_path / "events")

    result = read_table(str(tmp_path / "events"))

    assert list(result.frame.columns) == ["amount", "date", "hour"]
    assert result.frame["date"].tolist()[:3] == ["2024-01-01", "2024-01-01", "2024-01-02"]
    assert pd.isna(result.frame["date"].iloc[3])
    assert result.frame["hour"].tolist() == [1, 1, 2, 3]
    assert result.frame["hour"].dtype == "int64"
    assert result.locate(2) == "date=2024-01-02/hour=2/part-0.parquet row 1"
    assert read_columns(str(tmp_path / "events"))[1] == ["amount", "date", "hour"]


def test_a_glob_below_partition_folders_keeps_them(tmp_path: Path) -> None:
    _write_partitions(tmp_path / "events")

    result = read_table(str(tmp_path / "events" / "date=2024-01-0*" / "*" / "*.parquet"))

    assert result.frame["date"].tolist() == ["2024-01-01", "2024-01-01", "2024-01-02"]


def test_a_column_named_like_a_partition_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "date=2024-01-01"
    folder.mkdir()
    pd.DataFrame({"date": ["x"]}).to_parquet(folder / "part.parquet")

    with pytest.raises(DataError, match=r"part\.parquet: column 'date' is also a partition"):
        read_table(str(tmp_path))


def test_iter_batches_streams_bounded_batches_that_locate_their_rows(tmp_path: Path) -> None:
    pd.DataFrame({"x": range(10)}).to_parquet(tmp_path / "a.parquet")
    (tmp_path / "b.csv").write_text("x\n" + "\n".join(str(i) for i in range(10, 13)) + "\n")

    parts = list(iter_batches(str(tmp_path), batch_rows=4))

    assert [p.batch.num_rows for p in parts] == [4, 4, 2, 3]
    assert [p.first_row for p in parts] == [0, 4, 8, 0]
    assert parts[1].locate(1) == "a.parquet row 6"
    assert parts[3].locate(2) == "b.csv line 4 (row 3)"
    assert sum((p.batch.column("x").to_pylist() for p in parts), []) == list(range(13))


def test_csv_column_widened_part_way_is_read_once_and_cast(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    rows = [f"{i},{i}" for i in range(300_000)]
    path.write_text("n,code\n" + "\n".join(rows) + "\n2.5,AB-1\n")

    parts = list(iter_batches(str(path)))
    result = read_table(str(path))

    assert sum(p.batch.num_rows for p in parts) == 300_001
    assert len(result.frame) == 300_001
    assert result.frame["n"].dtype == "float64"
    assert result.frame["n"].iloc[-1] == 2.5
    assert result.frame["code"].iloc[[0, -1]].tolist() == ["0", "AB-1"]


def test_files_of_different_numeric_types_concatenate(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("v\n1\n")
    (tmp_path / "b.csv").write_text("v\n2.5\n")
    (tmp_path / "c.csv").write_text("v\nx\n")

    assert read_table(str(tmp_path / "[ab].csv")).frame["v"].tolist() == [1.0, 2.5]
    assert read_table(str(tmp_path / "*.csv")).frame["v"].tolist() == [1, 2.5, "x"]


def test_columns_that_differ_name_the_file_while_streaming(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    (tmp_path / "b.csv").write_text("x,z\n1,2\n")

    batches = iter_batches(str(tmp_path / "*.csv"))
    assert next(batches).batch.num_rows == 1
    with pytest.raises(DataError, match=r"b\.csv: columns differ from .*a\.csv: missing y"):
        next(batches)


@pytest.mark.parametrize(("name", "content", "message"), [
    ("rows.parquet.gz", b"x", r"rows\.parquet\.gz: a parquet file is compressed inside"),
    ("rows.csv.gz", b"not gzip at all", r"rows\.csv\.gz: cannot read as csv"),
    ("rows.jsonl", b'{"a": 1}\n{"a": "x"}\n',
     r"rows\.jsonl: column 'a' holds number values, then string values"),
    ("rows.jsonl", b'{"a": 1}\nnot json\n', r"rows\.jsonl: cannot read as jsonl"),
    ("rows.dat.gz", b"x", r"rows\.dat\.gz: unknown file extension '\.dat'"),
])
def test_unreadable_files_name_the_file_and_what_was_expected(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    (tmp_path / name).write_bytes(content)

    with pytest.raises(DataError, match=message):
        read_table(str(tmp_path / name))


def test_jsonl_integers_then_fractions_widen_to_float(tmp_path: Path) -> None:
    rows = [{"a": i} for i in range(100_000)] + [{"a": 0.5}]
    (tmp_path / "rows.jsonl").write_text(_jsonl(rows))

    frame = read_table(str(tmp_path / "rows.jsonl")).frame

    assert frame["a"].dtype == "float64" and frame["a"].iloc[-1] == 0.5 and len(frame) == 100_001


def test_unknown_protocol_is_an_error_naming_the_source() -> None:
    with pytest.raises(DataError, match=r"'nope://b/x\.csv': unknown protocol 'nope'"):
        read_table("nope://b/x.csv")


def _put(s3_options: dict[str, Any], key: str, data: bytes) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)
    with fs.open(key, "wb") as handle:
        handle.write(data)


def test_s3_glob_folder_and_partitions_read_like_local_files(
    s3_bucket: str, s3_options: dict[str, Any], tmp_path: Path
) -> None:
    _write_partitions(tmp_path / "events")
    for path in sorted((tmp_path / "events").rglob("*.parquet")):
        key = path.relative_to(tmp_path).as_posix()
        _put(s3_options, f"{s3_bucket}/{key}", path.read_bytes())
    _put(s3_options, f"{s3_bucket}/events/_SUCCESS", b"")
    _put(s3_options, f"{s3_bucket}/logs/a.csv.gz", gzip.compress(b"x,y\n1,2\n3,4,5\n"))
    local = read_table(str(tmp_path / "events"))

    remote = read_table(f"s3://{s3_bucket}/events", storage_options=s3_options)
    globbed = read_table(f"s3://{s3_bucket}/events/date=2024-01-02/*/*.parquet",
                         storage_options=s3_options)

    pd.testing.assert_frame_equal(remote.frame, local.frame)
    assert remote.fingerprint == local.fingerprint
    assert remote.files[0].path == f"s3://{s3_bucket}/events/date=2024-01-01/hour=1/part-0.parquet"
    assert globbed.frame["amount"].tolist() == [3.0]
    assert read_columns(f"s3://{s3_bucket}/events", storage_options=s3_options)[1] == [
        "amount", "date", "hour"]
    with pytest.raises(DataError, match=r"a\.csv\.gz line 3 \(row 2\): cannot read as csv: "
                                        r"expected 2 values as in the header, found 3"):
        read_table(f"s3://{s3_bucket}/logs/*.csv.gz", storage_options=s3_options)


def test_s3_credentials_come_from_the_environment_without_options(
    s3_bucket: str, s3_options: dict[str, Any]
) -> None:
    _put(s3_options, f"{s3_bucket}/rows.jsonl", _jsonl([{"a": 1}, {"a": 2}]).encode())

    parts = list(iter_batches(f"s3://{s3_bucket}/rows.jsonl"))

    assert [p.locate(1) for p in parts] == ["rows.jsonl line 2 (row 2)"]


def test_an_s3_source_without_credentials_is_a_data_error_naming_it(
    s3_bucket_needing_options: str, s3_options: dict[str, Any]
) -> None:
    """botocore raises its own error class when it finds no credentials: it is no OSError."""
    _put(s3_options, f"{s3_bucket_needing_options}/rows.csv", b"a\n1\n")
    source = f"s3://{s3_bucket_needing_options}/rows.csv"
    with pytest.raises(DataError, match=rf"data source '{source}': cannot list it: "
                       r"NoCredentialsError: Unable to locate credentials"):
        read_columns(source, storage_options={"client_kwargs": s3_options["client_kwargs"]})


def test_s3_source_matching_nothing_is_not_found(s3_bucket: str,
                                                s3_options: dict[str, Any]) -> None:
    with pytest.raises(DataNotFound, match=r"matches no file"):
        read_table(f"s3://{s3_bucket}/missing/*.parquet", storage_options=s3_options)
    with pytest.raises(DataNotFound, match=r"matches no file"):
        list_source_files(f"s3://{s3_bucket}/missing.csv", storage_options=s3_options)


def test_parquet_written_by_pyarrow_with_row_groups_streams_per_group(tmp_path: Path) -> None:
    table = pa.table({"x": list(range(100))})
    pq.write_table(table, tmp_path / "rows.parquet", row_group_size=10)

    parts = list(iter_batches(str(tmp_path / "rows.parquet"), batch_rows=25))

    assert max(p.batch.num_rows for p in parts) <= 25
    assert sum(p.batch.num_rows for p in parts) == 100


def test_s3_object_removed_after_listing_or_mid_read_names_the_file(
    s3_bucket: str, s3_options: dict[str, Any], tmp_path: Path
) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)
    pq.write_table(pa.table({"x": list(range(200_000))}), tmp_path / "big.parquet",
                   row_group_size=20_000)
    pq.write_table(pa.table({"x": [1]}), tmp_path / "small.parquet")
    fs.put(str(tmp_path / "small.parquet"), f"{s3_bucket}/rows/a.parquet")
    fs.put(str(tmp_path / "big.parquet"), f"{s3_bucket}/rows/b.parquet")
    fs.put(str(tmp_path / "big.parquet"), f"{s3_bucket}/big/c.parquet")
    options = {**s3_options, "default_block_size": 2**16, "default_cache_type": "none"}

    listed = iter_batches(f"s3://{s3_bucket}/rows", storage_options=options)
    assert next(listed).batch.num_rows == 1
    fs.rm(f"{s3_bucket}/rows/b.parquet")
    with pytest.raises(DataError, match=r"s3://.*/rows/b\.parquet: the file was removed after "
                                        r"the source was listed"):
        next(listed)

    reading = iter_batches(f"s3://{s3_bucket}/big", storage_options=options, batch_rows=20_000)
    assert next(reading).batch.num_rows == 20_000
    fs.rm(f"{s3_bucket}/big/c.parquet")
    with pytest.raises(DataError, match=r"s3://.*/big/c\.parquet: (the file was removed|cannot "
                                        r"read as parquet)"):
        list(reading)
