"""split_frame: random by seed, or by time, with sizes from the spec's fractions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import trainforge.split as split
from trainforge.config import SplitSpec
from trainforge.errors import DataError
from trainforge.ingest import read_table
from trainforge.split import split_frame


def _frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.permutation(n), unit="h"),
        },
        index=np.arange(n) * 10,
    )


def test_public_api() -> None:
    assert split.__all__ == ["Splits", "split_frame", "split_sizes"]


def test_random_sizes_follow_the_fractions() -> None:
    parts = split_frame(_frame(1000), SplitSpec(val_fraction=0.1, test_fraction=0.25))

    assert (len(parts.train), len(parts.val), len(parts.test)) == (650, 100, 250)
    ids = np.concatenate([parts.train["id"], parts.val["id"], parts.test["id"]])
    assert sorted(ids) == list(range(1000))
    for part in (parts.train, parts.val, parts.test):
        assert part.index.equals(pd.RangeIndex(len(part)))


def test_random_sizes_round_the_fractions() -> None:
    parts = split_frame(_frame(7), SplitSpec(val_fraction=0.15, test_fraction=0.15))

    assert (len(parts.train), len(parts.val), len(parts.test)) == (5, 1, 1)


def test_random_split_matches_the_seeded_permutation() -> None:
    frame = _frame(20)

    parts = split_frame(frame, SplitSpec(seed=7, val_fraction=0.2, test_fraction=0.25))

    order = np.random.default_rng(7).permutation(20)
    assert parts.test["id"].tolist() == sorted(order[:5])
    assert parts.val["id"].tolist() == sorted(order[5:9])
    assert parts.train["id"].tolist() == sorted(order[9:])


def test_same_seed_same_split_other_seed_other_split() -> None:
    frame = _frame(200)

    first = split_frame(frame, SplitSpec(seed=3))
    again = split_frame(frame, SplitSpec(seed=3))
    other = split_frame(frame, SplitSpec(seed=4))

    pd.testing.assert_frame_equal(first.test, again.test)
    pd.testing.assert_frame_equal(first.train, again.train)
    assert first.test["id"].tolist() != other.test["id"].tolist()


def test_time_split_puts_the_latest_rows_in_test() -> None:
    frame = _frame(100)

    parts = split_frame(
        frame, SplitSpec(method="time", time_column="ts", val_fraction=0.2, test_fraction=0.1)
    )

    assert (len(parts.train), len(parts.val), len(parts.test)) == (70, 20, 10)
    assert parts.train["ts"].max() < parts.val["ts"].min()
    assert parts.val["ts"].max() < parts.test["ts"].min()
    assert parts.test["ts"].is_monotonic_increasing
    assert parts.test["ts"].tolist() == sorted(frame["ts"])[-10:]


def test_time_split_keeps_ties_in_frame_order() -> None:
    frame = pd.DataFrame({"id": range(6), "day": [2, 1, 2, 1, 3, 3]})

    parts = split_frame(
        frame, SplitSpec(method="time", time_column="day", val_fraction=0.2, test_fraction=0.2)
    )

    assert parts.train["id"].tolist() == [1, 3, 0, 2]
    assert parts.val["id"].tolist() == [4]
    assert parts.test["id"].tolist() == [5]


def test_missing_time_column_lists_the_columns() -> None:
    spec = SplitSpec(method="time", time_column="when")

    with pytest.raises(DataError, match="time column 'when' not found; the columns are: id, ts"):
        split_frame(_frame(10), spec)


def test_null_times_are_rejected_naming_rows_from_one() -> None:
    frame = pd.DataFrame({"ts": pd.to_datetime(["2024-01-01", None, "2024-01-03"] * 3)})

    with pytest.raises(
        DataError, match=r"'ts' has 3 missing values \(first: row 2, row 5, row 8\)"
    ):
        split_frame(frame, SplitSpec(method="time", time_column="ts"))


def test_null_times_name_the_file_and_line_a_user_opens(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("ts,amount\n2024-01-01,1\n2024-01-02,2\n,3\n2024-01-04,4\n")
    raw = read_table(str(path))

    with pytest.raises(
        DataError, match=r"'ts' has 1 missing value \(first: rows.csv line 4 \(row 3\)\)"
    ):
        split_frame(raw.frame, SplitSpec(method="time", time_column="ts"), raw.locate)


@pytest.mark.parametrize("rows", [0, 2, 3])
def test_too_few_rows_for_three_splits(rows: int) -> None:
    spec = SplitSpec(val_fraction=0.15, test_fraction=0.15)

    with pytest.raises(
        DataError,
        match=rf"{rows} rows are too few for val_fraction=0.15 "
        r"and test_fraction=0.15: the .* split would be empty",
    ):
        split_frame(_frame(rows), spec)


def test_input_frame_is_left_unchanged() -> None:
    frame = _frame(50)
    before = frame.copy()

    split_frame(frame, SplitSpec(method="time", time_column="ts"))

    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize("method", ["random", "time"])
def test_positions_name_each_rows_place_in_the_input_frame(method: str) -> None:
    frame = _frame(40)

    parts = split_frame(frame, SplitSpec(method=method, time_column="ts", seed=2))

    for part, positions in zip((parts.train, parts.val, parts.test), parts.positions,
                               strict=True):
        assert part["id"].tolist() == frame["id"].to_numpy()[positions].tolist()
    assert sorted(np.concatenate(parts.positions).tolist()) == list(range(40))
