"""Pages: the frozen result of every list method, and walking them all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
DEFAULT_LIMIT = 100
HISTORY_LIMIT = 10_000  # metric series are long and their points small


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing: `items` in the listing's order, and the cursor of the next page
    (None when this is the last)."""

    items: tuple[T, ...]
    next_cursor: str | None = None


def all_items(fetch: Callable[[str | None], Page[T]]) -> list[T]:
    """Every item of a listing: `fetch(cursor)` is called with None, then with each page's
    `next_cursor` until there is none.

    Example: `all_items(lambda cursor: store.list_checkpoints(run_id, cursor=cursor))`.
    """
    items: list[T] = []
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        items.extend(page.items)
        if page.next_cursor is None:
            return items
        cursor = page.next_cursor
