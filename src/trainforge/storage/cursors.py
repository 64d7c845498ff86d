"""Page cursors: the sort key of the last item a page covered, bound to the listing that made it.

A cursor is URL-safe base64 of compact JSON `{"l": listing, "a": digest, "k": [values]}`:
`listing` names the method, `digest` is a short hash of the arguments it was called with
(`limit` aside), and the values are JSON scalars, datetimes as `{"t": "<iso>"}`. Nothing is
signed, as nothing needs to be: a cursor edited by hand either fails to decode (`ValueError`) or
points elsewhere in the same listing. Pure functions, no SQL.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

R = TypeVar("R")
# The Python types a key value may take; NoneType among them marks a nullable key.
Types = tuple[type, ...]


def check_limit(limit: int) -> None:
    """`ValueError` unless `limit` is an integer >= 1."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be an integer >= 1, got {limit!r}")


@dataclass(frozen=True)
class Listing:
    """One listing method called with given arguments: its cursors are valid only for it."""

    name: str
    arguments: tuple[Any, ...] = ()

    @property
    def digest(self) -> str:
        text = json.dumps(self.arguments, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def encode(self, key: Sequence[Any]) -> str:
        """The cursor of the page after the item whose sort key is `key`."""
        document = {"l": self.name, "a": self.digest, "k": [_dumped(value) for value in key]}
        text = json.dumps(document, separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    def decode(self, cursor: str | None, types: Sequence[Types]) -> list[Any] | None:
        """The sort key `cursor` holds (None for None): one value per entry of `types`, each
        an instance of one of that entry's types. `ValueError` naming the cursor when it is
        malformed or was made by another listing or with other arguments."""
        if cursor is None:
            return None
        document = _document(cursor, self.name)
        if document.get("l") != self.name:
            raise ValueError(f"cursor {cursor!r} was not made by {self.name} (it was made by "
                             f"{document.get('l')!r})")
        if document.get("a") != self.digest:
            raise ValueError(f"cursor {cursor!r} was made by {self.name} with other arguments; "
                             "a cursor is valid only for the call that returned it")
        values = document.get("k")
        if not isinstance(values, list) or len(values) != len(types):
            raise ValueError(f"cursor {cursor!r} is malformed: expected {len(types)} key "
                             f"value(s) for {self.name}")
        key = [_loaded(value) for value in values]
        for value, allowed in zip(key, types):
            if not isinstance(value, allowed) or isinstance(value, bool):
                raise ValueError(f"cursor {cursor!r} is malformed: unexpected key value "
                                 f"{value!r} for {self.name}")
        return key

    def cut(
        self, rows: Sequence[R], limit: int, key: Callable[[R], Sequence[Any]]
    ) -> tuple[Sequence[R], str | None]:
        """The first `limit` of `rows` (fetched `limit + 1` at most), and the cursor after them
        when there were more."""
        if len(rows) <= limit:
            return rows, None
        return rows[:limit], self.encode(key(rows[limit - 1]))


def _document(cursor: str, listing: str) -> dict[str, Any]:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        document = json.loads(text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        document = None
    if not isinstance(document, dict):
        raise ValueError(f"cursor {cursor!r} is malformed: expected a cursor returned by "
                         f"{listing} (a page's next_cursor)")
    return document


def _dumped(value: Any) -> Any:
    return {"t": value.isoformat()} if isinstance(value, datetime) else value


def _loaded(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("t"), str):
        try:
            return datetime.fromisoformat(value["t"])
        except ValueError:
            return value
    return value
