"""Reading one file as Arrow record batches, a block at a time: Parquet a row group at a time
(never the whole file at once), CSV and JSON Lines through pyarrow's streaming readers
(decompressed on the fly).

Rules:
- Parquet: pandas index columns are left out (pandas' own metadata is kept without them).
- CSV: the strings pandas reads as missing (`''`, `NA`, `null`, `NaN`, ...) are null in every
  column, as `pandas.read_csv` reads them. pyarrow infers a column's type from the first block;
  when a later block holds a value that type cannot take, the file is read again from its start
  with that column widened (int64 to float64, anything else to string) and the rows already
  handed out are skipped: batches of one file may then differ in that column's type, and
  `read_table` casts them to the widest.
- JSON Lines: one object per line, blank lines skipped. A fraction further down in an integer
  column widens the integer columns to float64 the same way (pyarrow's error does not say
  which column; all of them are widened); a column changing between number and text is a
  DataError naming it.
- A file that cannot be parsed is a DataError naming it; a CSV row with more or fewer values
  than the header is named by its line and data row.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from trainforge.errors import DataError
from trainforge.ingest._csv import ragged_record
from trainforge.ingest._sources import SourceFileInfo

BLOCK_BYTES = 1 << 20
# pandas.read_csv's default na_values.
_CSV_NULLS = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
              "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
_CSV_COLUMN = re.compile(r"In CSV column #(\d+): .*conversion error to (\w+)")
_JSON_COLUMN = re.compile(r"Column\(/([^)]*)\) changed from (\w+) to (\w+)")
_READ_ERRORS = (ValueError, OSError, pa.ArrowException)


def open_binary(fs: Any, file: SourceFileInfo) -> Any:
    """The file's bytes as a stream, decompressed."""
    return pa.input_stream(fs.open(file.path, "rb"), compression=file.compression)


def open_text(fs: Any, file: SourceFileInfo) -> io.TextIOWrapper:
    """The file as UTF-8 text (a byte order mark skipped, undecodable bytes replaced), lines
    kept as they are (`newline=""`)."""
    raw = io.BufferedReader(open_binary(fs, file))
    return io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")


def file_schema(fs: Any, file: SourceFileInfo) -> pa.Schema:
    """The columns of a file without its rows (the first block of a text file)."""
    try:
        if file.format == "parquet":
            with fs.open(file.path, "rb") as handle:
                return _without_index(pq.read_schema(handle))
        with open_binary(fs, file) as stream:
            reader = _csv_reader(stream, {}) if file.format == "csv" else _json_reader(stream, {})
            return reader.schema
    except _READ_ERRORS as exc:
        raise _unreadable(fs, file, exc) from None


def count_rows(fs: Any, file: SourceFileInfo) -> int:
    """The rows of a file: a Parquet footer's count, or a text file parsed once."""
    try:
        if file.format == "parquet":
            with fs.open(file.path, "rb") as handle:
                return int(pq.ParquetFile(handle).metadata.num_rows)
    except _READ_ERRORS as exc:
        raise _unreadable(fs, file, exc) from None
    return sum(batch.num_rows for batch in _text_batches(fs, file))


def csv_rows_without_parsing(data: bytes) -> int | None:
    """The rows of an uncompressed CSV file's bytes where counting lines gives what parsing
    gives: no quote character (no field spans lines), no lone carriage return, a header, and
    every non-empty line with the header's number of commas. None otherwise: parse the file
    (`count_rows`), which also names what is wrong with it."""
    if b'"' in data or data.count(b"\r") != data.count(b"\r\n"):
        return None
    lines = [line for line in data.split(b"\n") if line not in (b"", b"\r")]
    if not lines:
        return None
    fields = lines[0].count(b",")
    if any(line.count(b",") != fields for line in lines):
        return None
    return len(lines) - 1


def file_batches(fs: Any, file: SourceFileInfo, batch_rows: int) -> tuple[pa.Schema,
                                                                         Iterator[pa.RecordBatch]]:
    """(the file's schema, its rows as record batches of at most `batch_rows` rows for Parquet,
    one parser block for text files). Reading starts at once, so a file that cannot be opened
    fails here; a block that cannot be parsed fails while iterating."""
    try:
        if file.format == "parquet":
            return _parquet_batches(fs, file, batch_rows)
        schema = file_schema(fs, file)
        return schema, _text_batches(fs, file)
    except DataError:
        raise
    except _READ_ERRORS as exc:
        raise _unreadable(fs, file, exc) from None


def _parquet_batches(fs: Any, file: SourceFileInfo,
                     batch_rows: int) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    handle = fs.open(file.path, "rb")
    parquet = pq.ParquetFile(handle, pre_buffer=False)  # a row group at a time, not the file
    schema = _without_index(parquet.schema_arrow)

    def batches() -> Iterator[pa.RecordBatch]:
        with handle:
            try:
                for batch in parquet.iter_batches(batch_size=batch_rows, columns=schema.names):
                    yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)
            except _READ_ERRORS as exc:
                raise _unreadable(fs, file, exc) from None

    return schema, batches()


def _text_batches(fs: Any, file: SourceFileInfo) -> Iterator[pa.RecordBatch]:
    """The file's blocks; on a type the first block could not foresee, the file is read again
    with that column widened and the rows already yielded skipped."""
    types: dict[str, pa.DataType] = {}
    done = 0
    while True:
        seen, reader = 0, None
        stream = open_binary(fs, file)
        try:
            reader = (_csv_reader if file.format == "csv" else _json_reader)(stream, types)
            for batch in reader:
                skip = min(max(done - seen, 0), len(batch))
                seen += len(batch)
                if skip < len(batch):
                    done += len(batch) - skip
                    yield batch.slice(skip)
            return
        except _READ_ERRORS as exc:
            schema = pa.schema([]) if reader is None else reader.schema
            widened = _widen(file, schema, exc, types)
            if widened is None:
                raise _unreadable(fs, file, exc) from None
            types.update(widened)
        finally:
            stream.close()


def _widen(file: SourceFileInfo, schema: pa.Schema, exc: Exception,
           types: dict[str, pa.DataType]) -> dict[str, pa.DataType] | None:
    """The wider type for the column a conversion error names, or None when it names none
    (or it is already as wide as it goes)."""
    text = str(exc)
    if file.format == "csv":
        match = _CSV_COLUMN.search(text)
        if not match or int(match.group(1)) >= len(schema):
            return None
        name = schema.names[int(match.group(1))]
        wider = pa.float64() if match.group(2) == "int64" else pa.string()
        return None if types.get(name) == wider else {name: wider}
    if "Failed to convert JSON to int64" not in text:
        return None
    integers = {f.name: pa.float64() for f in schema if pa.types.is_integer(f.type)
                and types.get(f.name) != pa.float64()}
    return integers or None


def _csv_reader(stream: Any, types: dict[str, pa.DataType]) -> Any:
    return pa_csv.open_csv(
        stream,
        read_options=pa_csv.ReadOptions(block_size=BLOCK_BYTES),
        convert_options=pa_csv.ConvertOptions(
            column_types=types, null_values=_CSV_NULLS, strings_can_be_null=True
        ),
    )


def _json_reader(stream: Any, types: dict[str, pa.DataType]) -> Any:
    schema = pa.schema(list(types.items())) if types else None
    return pa_json.open_json(
        stream,
        read_options=pa_json.ReadOptions(block_size=BLOCK_BYTES),
        parse_options=pa_json.ParseOptions(explicit_schema=schema),
    )


def _without_index(schema: pa.Schema) -> pa.Schema:
    """The schema without the pandas index columns a Parquet file may store."""
    meta = schema.pandas_metadata
    index = {c for c in (meta or {}).get("index_columns", []) if isinstance(c, str)}
    if not index:
        return schema
    kept = pa.schema([f for f in schema if f.name not in index])
    assert meta is not None
    meta = {**meta, "index_columns": [],
            "columns": [c for c in meta.get("columns", []) if c.get("field_name") not in index]}
    return kept.with_metadata({b"pandas": json.dumps(meta).encode()})


def _unreadable(fs: Any, file: SourceFileInfo, exc: Exception) -> DataError:
    if isinstance(exc, FileNotFoundError):
        return DataError(f"{file.path}: the file was removed after the source was listed "
                         "(another process changed the data while it was read)")
    kind = file.format
    changed = _JSON_COLUMN.search(str(exc)) if kind == "jsonl" else None
    if changed:
        return DataError(
            f"{file.path}: column {changed.group(1)!r} holds {changed.group(2)} values, then "
            f"{changed.group(3)} values; expected one type per column in JSON Lines"
        )
    if kind == "csv":
        try:
            ragged = ragged_record(_opener(fs, file))
        except _READ_ERRORS:
            ragged = None
        if ragged is not None:
            line, row, expected, found = ragged
            return DataError(
                f"{file.path} line {line} (row {row}): cannot read as csv: expected {expected} "
                f"values as in the header, found {found}"
            )
    return DataError(f"{file.path}: cannot read as {kind}: {exc}")


def _opener(fs: Any, file: SourceFileInfo) -> Callable[[], io.TextIOWrapper]:
    return lambda: open_text(fs, file)
