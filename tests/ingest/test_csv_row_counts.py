"""Counting a small CSV file's rows by its lines, as a snapshot does, gives what parsing gives,
or declines (None) so the file is parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainforge.errors import DataError
from trainforge.ingest import list_source_files
from trainforge.ingest._formats import count_rows, csv_rows_without_parsing

COUNTED = {
    "plain": b"id,value\n1,0.5\n2,1.5\n",
    "no final newline": b"id,value\n1,0.5\n2,1.5",
    "crlf": b"id,value\r\n1,0.5\r\n2,1.5\r\n",
    "blank lines": b"id,value\n\n1,0.5\n\r\n2,1.5\n\n",
    "header only": b"id,value\n",
    "one column": b"id\n1\n \n3\n",
}
DECLINED = {  # the data, and the rows parsing finds (None: a DataError naming the file)
    "quoted newline": (b'id,text\n1,"a\nb"\n', 1),
    "lone carriage returns": (b"id,value\r1,0.5\r2,1.5\r", 2),
    "ragged": (b"id,value\n1,0.5,9\n", None),
    "empty": (b"", None),
}


def parsed(tmp_path: Path, data: bytes) -> int:
    path = tmp_path / "f.csv"
    path.write_bytes(data)
    listing = list_source_files(str(path))
    return count_rows(listing.fs, listing.files[0])


@pytest.mark.parametrize("name", COUNTED)
def test_line_counts_equal_parsed_counts(tmp_path: Path, name: str) -> None:
    data = COUNTED[name]
    assert csv_rows_without_parsing(data) == parsed(tmp_path, data)


@pytest.mark.parametrize("name", DECLINED)
def test_files_lines_cannot_count_are_left_to_the_parser(tmp_path: Path, name: str) -> None:
    data, rows = DECLINED[name]
    assert csv_rows_without_parsing(data) is None
    if rows is None:
        with pytest.raises(DataError, match="f.csv"):
            parsed(tmp_path, data)
    else:
        assert parsed(tmp_path, data) == rows
