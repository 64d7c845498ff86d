"""Page cursors and `all_items`: pure, no database."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone

import pytest

from trainforge.storage import Page, all_items
from trainforge.storage.cursors import Listing, check_limit

NoneType = type(None)
RUNS = Listing("list_runs", ("e1", None))
KEY_TYPES = [(datetime,), (str,), (float, NoneType)]


def test_a_cursor_round_trips_its_key_and_is_url_safe() -> None:
    key = [datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc), "run/é", None]
    cursor = RUNS.encode(key)
    assert cursor.isascii() and not {"/", "+", "=", " "} & set(cursor)
    assert RUNS.decode(cursor, KEY_TYPES) == key
    assert RUNS.decode(None, KEY_TYPES) is None


def test_cut_keeps_limit_rows_and_encodes_the_last() -> None:
    rows = [(1, "a"), (2, "b"), (3, "c")]
    assert RUNS.cut(rows, 3, lambda row: row) == (rows, None)
    kept, cursor = RUNS.cut(rows, 2, lambda row: row)
    assert kept == rows[:2]
    assert RUNS.decode(cursor, [(int,), (str,)]) == [2, "b"]


def _forged(document: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode()


@pytest.mark.parametrize(("cursor", "message"), [
    ("%%%", "is malformed: expected a cursor returned by list_runs"),
    (_forged([1, 2]), "is malformed"),
    (Listing("list_checkpoints", ("e1", None)).encode([1]), "was not made by list_runs (it "
                                                            "was made by 'list_checkpoints')"),
    (Listing("list_runs", ("e2", None)).encode([1]), "with other arguments"),
    (_forged({"l": "list_runs", "a": RUNS.digest, "k": ["x"]}), "expected 3 key value"),
    (_forged({"l": "list_runs", "a": RUNS.digest, "k": ["x", "r", 1.0]}),
     "unexpected key value 'x'"),
    (_forged({"l": "list_runs", "a": RUNS.digest, "k": [{"t": "nope"}, "r", 1.0]}),
     "unexpected key value"),
    (_forged({"l": "list_runs", "a": RUNS.digest, "k": [{"t": "2026-01-01"}, True, 1.0]}),
     "unexpected key value True"),
])
def test_a_bad_cursor_raises_value_error_naming_it(cursor: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"cursor {cursor!r}") as raised:
        RUNS.decode(cursor, KEY_TYPES)
    assert message in str(raised.value)


@pytest.mark.parametrize("limit", [0, -5, 1.5, True, "10"])
def test_a_limit_must_be_an_integer_of_at_least_one(limit: object) -> None:
    with pytest.raises(ValueError, match="limit must be an integer >= 1"):
        check_limit(limit)  # type: ignore[arg-type]


def test_all_items_follows_next_cursors_until_there_is_none() -> None:
    book = {None: Page((1, 2), "b"), "b": Page((3,), "c"), "c": Page((), None)}
    asked: list[str | None] = []

    def fetch(cursor: str | None) -> Page[int]:
        asked.append(cursor)
        return book[cursor]

    assert all_items(fetch) == [1, 2, 3]
    assert asked == [None, "b", "c"]
