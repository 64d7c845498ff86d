"""The data read, stored as a step's output and read back (as a resumed pipeline run does),
still names a row by the line an editor shows while its file holds the bytes read; a streamed
source's row-group plan comes back reading the same rows; a remote source reached through
storage options reopens with those the decoding value store's credentials give for it."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import trainforge.pipeline._values  # noqa: F401 - registers the chain's value types
from trainforge.config import Credentials
from trainforge.errors import ValueStoreError
from trainforge.ingest import IngestResult, list_source_files, read_table
from trainforge.orchestration import DecodeContext, ValueStore
from trainforge.storage.objects import open_object_store
from trainforge.streaming._row_groups import RowGroupPlan


@pytest.fixture
def values(tmp_path: Path) -> ValueStore:
    return ValueStore(open_object_store(tmp_path / "objects"))


def restored(values: ValueStore, read: IngestResult) -> IngestResult:
    ref = values.put(read, "the data read")
    assert ref is not None
    back: IngestResult = values.get(ref, "the data read")
    pd.testing.assert_frame_equal(back.frame, read.frame)
    return back


def test_a_restored_read_names_the_lines_of_its_text_files(tmp_path, values):
    data = tmp_path / "data"
    data.mkdir()
    lines = ["amount,note"] + [f"{i},plain" for i in range(20)]
    lines[5:5] = ["", '7,"two', 'lines"']  # a blank line, then a value over two lines
    (data / "a.csv").write_text("\n".join(lines) + "\n")
    with gzip.open(data / "b.csv.gz", "wt") as packed:
        packed.write("amount,note\n\n1,x\n2,y\n")
    read = read_table(str(data))
    back = restored(values, read)

    assert back.locate(4) == read.locate(4) == "a.csv line 7 (row 5)"
    assert back.frame["note"][4] == "two\nlines"
    assert back.locate(6) == read.locate(6) == "a.csv line 10 (row 7)"
    assert back.locate(21) == read.locate(21) == "b.csv.gz line 3 (row 1)"
    kept = back.without_rows(np.arange(len(back.frame)) < 6)  # a quarantine after the resume
    assert kept.locate(0) == "a.csv line 10 (row 7)"


def test_a_file_changed_since_it_was_read_is_named_by_row_only(tmp_path, values):
    path = tmp_path / "rows.csv"
    path.write_text("a\n1\n2\n")
    read = read_table(str(path))
    back = restored(values, read)
    path.write_text("a\n\n5\n6\n")  # the same rows count, other bytes: lines would lie
    assert back.locate(1) == "rows.csv row 2"
    path.unlink()
    assert restored(values, read).locate(0) == "rows.csv row 1"  # gone: no lines either


def test_parquet_rows_are_named_by_row(tmp_path, values):
    pd.DataFrame({"a": [1, 2, 3]}).to_parquet(tmp_path / "rows.parquet")
    back = restored(values, read_table(str(tmp_path / "rows.parquet")))
    assert back.locate(2) == "rows.parquet row 3"


def test_a_streamed_plan_comes_back_reading_the_same_row_groups(tmp_path, values):
    pq.write_table(pa.table({"a": list(range(10)), "b": [str(i) for i in range(10)]}),
                   tmp_path / "rows.parquet", row_group_size=4)
    plan = RowGroupPlan.from_listing(list_source_files(str(tmp_path / "*.parquet")))
    ref = values.put(plan, "a row-group plan")
    assert ref is not None
    back: RowGroupPlan = values.get(ref, "a row-group plan")
    assert [g.rows for g in back.groups] == [4, 4, 2] and back.schema == plan.schema
    assert back.read(1, ["a"]).equals(plan.read(1, ["a"]))
    assert back.groups[2].locate(1) == "rows.parquet row 10"


@pytest.fixture
def s3(s3_options):
    import s3fs

    return s3fs.S3FileSystem(**s3_options)


def given(values: ValueStore, source: str, options: dict) -> ValueStore:
    """The same value store, decoding with `options` for `source`."""
    return ValueStore(values.objects, DecodeContext(Credentials({source: options})))


def test_a_plan_listed_with_storage_options_reopens_with_those_its_decoder_is_given(
    s3_bucket_needing_options, s3, s3_options, values
):
    """The options may hold credentials and name an endpoint: the stored plan keeps their
    names only. It reads again where the value store decoding it is given options for its
    source (a pipeline run's session, with its spec's), and names what it needs where none
    are."""
    bucket = s3_bucket_needing_options
    table = pa.table({"a": list(range(10))})
    with s3.open(f"{bucket}/rows/part-0.parquet", "wb") as out:
        pq.write_table(table, out, row_group_size=4)
    source = f"s3://{bucket}/rows/*.parquet"
    plan = RowGroupPlan.from_listing(list_source_files(source, storage_options=s3_options))
    ref = values.put(plan, "a plan")
    assert ref is not None
    stored = values.objects.read(ref.key)
    assert b"client_kwargs" in stored
    assert s3_options["client_kwargs"]["endpoint_url"].encode() not in stored

    with pytest.raises(ValueStoreError) as refused:
        values.get(ref, "a plan")
    assert f"data source {source!r} was listed with storage options (client_kwargs, " \
        "default_block_size, key, secret), which the value store does not keep" in \
        str(refused.value)
    with pytest.raises(ValueStoreError, match="which the value store does not keep"):
        given(values, f"s3://{bucket}/other/*.parquet", s3_options).get(ref, "a plan")
    back: RowGroupPlan = given(values, source, s3_options).get(ref, "a plan")
    assert back.read(1, ["a"]).equals(plan.read(1, ["a"]))
    assert back.groups[2].locate(1) == "part-0.parquet row 10"


def test_a_restored_remote_read_names_lines_with_the_options_its_decoder_is_given(
    s3_bucket_needing_options, s3, s3_options, values
):
    bucket = s3_bucket_needing_options
    s3.pipe(f"{bucket}/text/rows.csv", b"a,b\n1,x\n\n2,y\n")
    source = f"s3://{bucket}/text/rows.csv"
    read = read_table(source, storage_options=s3_options)
    assert read.locate(1) == "rows.csv line 4 (row 2)"
    assert restored(given(values, source, s3_options), read).locate(1) == \
        "rows.csv line 4 (row 2)"
    assert restored(values, read).locate(1) == "rows.csv row 2"  # no options here: no lines
