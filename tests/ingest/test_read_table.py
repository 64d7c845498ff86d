"""read_table: files found by path or glob, concatenated, hashed and located row by row."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import trainforge.ingest as ingest
from trainforge.entities import DataVersion
from trainforge.errors import DataError, DataNotFound
from trainforge.ingest import read_columns, read_table


def _write_parts(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    parts = [
        pd.DataFrame({"amount": [1.0, 2.0, 3.0], "hour": [1, 2, 3]}),
        pd.DataFrame({"amount": [4.0, 5.0], "hour": [4, 5]}),
        pd.DataFrame({"hour": [6], "amount": [6.0]}),
    ]
    paths = [folder / f"part-{i}.parquet" for i in range(len(parts))]
    for frame, path in zip(parts, paths, strict=True):
        frame.to_parquet(path)
    return paths


def test_public_api() -> None:
    assert ingest.__all__ == [
        "DEFAULT_BATCH_ROWS", "Format", "HashCache", "IngestResult", "SourceBatch", "SourceFile",
        "SourceFileInfo", "SourceListing", "StoredLineMaps", "check_columns", "content_id",
        "count_rows", "csv_rows_without_parsing", "data_version_of", "file_batches", "file_sha256",
        "iter_batches", "list_source_files", "option_names",
        "read_columns", "read_table", "reopen_filesystem", "source_fingerprint", "stat_key",
        "with_partitions"]


def test_reads_one_csv_file_with_its_hash_and_size(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("amount,category\n1.5,grocery\n2.5,travel\n")

    result = read_table(str(path))

    assert result.frame.to_dict("list") == {"amount": [1.5, 2.5], "category": ["grocery", "travel"]}
    (file,) = result.files
    assert file.path == str(path)
    assert file.size == path.stat().st_size
    assert file.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert file.rows == 2


def test_glob_reads_files_in_path_order_under_a_fresh_index(tmp_path: Path) -> None:
    _write_parts(tmp_path / "data")

    result = read_table(str(tmp_path / "data" / "part-*.parquet"))

    assert [Path(f.path).name for f in result.files] == [f"part-{i}.parquet" for i in range(3)]
    assert result.frame["amount"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert result.frame["hour"].tolist() == [1, 2, 3, 4, 5, 6]
    assert list(result.frame.columns) == ["amount", "hour"]
    assert result.frame.index.equals(pd.RangeIndex(6))


def test_locate_maps_rows_back_to_files(tmp_path: Path) -> None:
    _write_parts(tmp_path)
    result = read_table(str(tmp_path / "*.parquet"))

    located = [result.locate(i) for i in range(6)]

    assert located == [
        "part-0.parquet row 1",
        "part-0.parquet row 2",
        "part-0.parquet row 3",
        "part-1.parquet row 1",
        "part-1.parquet row 2",
        "part-2.parquet row 1",
    ]
    with pytest.raises(IndexError, match="row 6"):
        result.locate(6)


def test_relative_glob_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_parts(tmp_path / "data")
    monkeypatch.chdir(tmp_path)

    result = read_table("data/*.parquet")

    assert len(result.frame) == 6
    assert result.files[0].path == str(tmp_path / "data" / "part-0.parquet")


def test_recursive_glob_names_files_relative_to_their_common_parent(tmp_path: Path) -> None:
    _write_parts(tmp_path / "root" / "a")
    _write_parts(tmp_path / "root" / "b")

    result = read_table(str(tmp_path / "root" / "**" / "*.parquet"))

    assert len(result.files) == 6
    assert result.locate(6) == "b/part-0.parquet row 1"
    assert result.data_version().files[0]["name"] == "a/part-0.parquet"


def test_fingerprint_names_content_not_location(tmp_path: Path) -> None:
    _write_parts(tmp_path / "one")
    shutil.copytree(tmp_path / "one", tmp_path / "elsewhere" / "two")

    first = read_table(str(tmp_path / "one" / "*.parquet"))
    moved = read_table(str(tmp_path / "elsewhere" / "two" / "*.parquet"))
    (tmp_path / "one" / "part-2.parquet").unlink()
    fewer = read_table(str(tmp_path / "one" / "*.parquet"))

    assert first.fingerprint == moved.fingerprint
    assert len(first.fingerprint) == 64
    assert fewer.fingerprint != first.fingerprint


def test_fingerprint_changes_with_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("a\n1\n")
    before = read_table(str(path)).fingerprint
    path.write_text("a\n2\n")

    assert read_table(str(path)).fingerprint != before


def test_data_version_describes_the_files_read(tmp_path: Path) -> None:
    _write_parts(tmp_path)
    source = str(tmp_path / "*.parquet")
    result = read_table(source)

    version = result.data_version()

    assert isinstance(version, DataVersion)
    assert version.data_version_id == result.fingerprint
    assert version.source == source
    assert version.num_rows == 6
    assert [f["name"] for f in version.files] == [f"part-{i}.parquet" for i in range(3)]
    assert [f["rows"] for f in version.files] == [3, 2, 1]
    assert version.files[0]["sha256"] == result.files[0].sha256
    assert version.files[0]["size"] == result.files[0].size


def test_large_file_is_hashed_in_chunks_to_the_same_digest(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("value\n" + "\n".join(str(i) for i in range(400_000)) + "\n")
    assert path.stat().st_size > 2 << 20

    (file,) = read_table(str(path)).files

    assert file.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_explicit_format_reads_any_extension(tmp_path: Path) -> None:
    path = tmp_path / "rows.txt"
    path.write_text("a,b\n1,2\n")

    assert read_table(str(path), format="csv").frame.to_dict("list") == {"a": [1], "b": [2]}


def test_unknown_extension_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "rows.txt"
    path.write_text("a,b\n1,2\n")

    with pytest.raises(DataError, match=r"rows\.txt: unknown file extension '\.txt'"):
        read_table(str(path))


def test_no_matching_file_names_the_pattern(tmp_path: Path) -> None:
    pattern = str(tmp_path / "missing-*.parquet")

    with pytest.raises(DataNotFound, match=r"missing-\*\.parquet.*matches no file"):
        read_table(pattern)


def test_an_empty_folder_as_source_says_so(tmp_path: Path) -> None:
    (tmp_path / "_SUCCESS").write_text("")

    with pytest.raises(DataNotFound, match="is a folder holding no file"):
        read_table(str(tmp_path))


def test_unparseable_parquet_names_the_file_and_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"not a parquet file at all")

    with pytest.raises(DataError, match=r"broken\.parquet: cannot read as parquet: .*magic bytes"):
        read_table(str(path))


@pytest.mark.parametrize(
    ("text", "line", "row", "found"),
    [
        ("a,b\n1,2\n3,4,5\n", 3, 2, 3),
        ("a,b\n1,2\n\n\"x\ny\",3\n4\n5,6\n", 6, 3, 1),
        ("a,b\r\n1,2\r\n3,4\r\n5,6,7\r\n", 4, 3, 3),
    ],
)
def test_ragged_csv_row_names_the_file_line_and_row(
    tmp_path: Path, text: str, line: int, row: int, found: int
) -> None:
    path = tmp_path / "ragged.csv"
    path.write_bytes(text.encode())

    with pytest.raises(DataError) as caught:
        read_table(str(path))

    assert str(caught.value) == (
        f"{path} line {line} (row {row}): cannot read as csv: expected 2 values as in the "
        f"header, found {found}"
    )


def test_csv_locations_are_the_lines_an_editor_shows(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    lines = ["amount,note"] + [f"{i},plain" for i in range(60)]
    lines[10:10] = ["", '7,"two', 'lines"']  # a blank line, then a value over two lines
    path.write_text("\n".join(lines) + "\n")

    result = read_table(str(path))

    assert result.locate(0) == "rows.csv line 2 (row 1)"
    assert result.locate(8) == "rows.csv line 10 (row 9)"
    assert result.locate(9) == "rows.csv line 12 (row 10)"
    assert result.locate(10) == "rows.csv line 14 (row 11)"
    assert result.frame["note"][9] == "two\nlines"
    assert result.locate(60) == "rows.csv line 64 (row 61)"


def test_row_49_of_a_plain_csv_is_line_51(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("a\n" + "".join(f"{i}\n" for i in range(100)))

    assert read_table(str(path)).locate(49) == "rows.csv line 51 (row 50)"


def test_a_csv_changed_since_it_was_read_is_located_by_row_only(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("a\n1\n2\n")
    result = read_table(str(path))
    path.write_text("a\n\n\n1\n2\n3\n")

    assert result.locate(1) == "rows.csv row 2"


def test_a_csv_value_too_long_to_scan_leaves_the_line_out(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(f"a,b\n1,{'x' * 200_000}\n2,y\n")
    result = read_table(str(path))

    assert result.locate(1) == "rows.csv row 2"


def test_read_columns_reads_a_csv_header_line_only(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(b"\xef\xbb\xbf\n\"amount\",hour\r\n1,2,3\r\nnot, csv, at all, \"\r\n")

    assert read_columns(str(path)) == (str(path), ["amount", "hour"])


def test_read_columns_reads_a_parquet_footer_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_parts(tmp_path)
    pd.DataFrame({"x": [1]}, index=pd.Index([7], name="id")).to_parquet(tmp_path / "z.parquet")

    def no_rows(*args: object, **kwargs: object) -> None:
        raise AssertionError("read_columns read rows")

    monkeypatch.setattr(pd, "read_parquet", no_rows)
    monkeypatch.setattr(pq, "read_table", no_rows)

    assert read_columns(str(tmp_path / "*.parquet")) == (
        str(tmp_path / "part-0.parquet"), ["amount", "hour"])
    assert read_columns(str(tmp_path / "z.parquet"))[1] == ["x"]


def test_read_columns_of_unreadable_or_missing_files_name_them(tmp_path: Path) -> None:
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")

    with pytest.raises(DataError, match=r"empty\.csv: cannot read as csv: .*no header line"):
        read_columns(str(tmp_path / "empty.csv"))
    with pytest.raises(DataError, match=r"broken\.parquet: cannot read as parquet"):
        read_columns(str(tmp_path / "broken.parquet"))
    with pytest.raises(DataNotFound, match="matches no file"):
        read_columns(str(tmp_path / "none-*.csv"))


def test_empty_csv_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")

    with pytest.raises(DataError, match=r"empty\.csv: cannot read as csv"):
        read_table(str(path))


def test_header_only_files_contain_no_rows(tmp_path: Path) -> None:
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("amount,hour\n")
    source = str(tmp_path / "*.csv")

    with pytest.raises(DataError, match=r"\*\.csv: contains no rows \(2 file\(s\) read\)"):
        read_table(source)


def test_an_empty_file_among_others_adds_no_rows(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("amount,hour\n1.5,1\n")
    (tmp_path / "b.csv").write_text("amount,hour\n")
    (tmp_path / "c.csv").write_text("amount,hour\n2.5,2\n")

    result = read_table(str(tmp_path / "*.csv"))

    assert result.frame["amount"].tolist() == [1.5, 2.5]
    assert result.locate(1) == "c.csv line 2 (row 1)"


def test_differing_columns_name_the_file_and_columns(tmp_path: Path) -> None:
    pd.DataFrame({"amount": [1.0], "hour": [1]}).to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"amount": [2.0], "day": [3]}).to_parquet(tmp_path / "b.parquet")

    with pytest.raises(DataError, match=r"b\.parquet: columns differ .*missing hour; extra day"):
        read_table(str(tmp_path / "*.parquet"))
