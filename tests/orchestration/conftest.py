"""The runner tests' store (SQLite: they test the runner, not the store) and value store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from trainforge.orchestration import ValueStore
from trainforge.storage import Store, open_store
from trainforge.storage.objects import open_object_store


@pytest.fixture
def sqlite_store(sqlite_url: str) -> Iterator[Store]:
    """Tests of the runner's behaviour, not of the store, run on SQLite only."""
    opened = open_store(sqlite_url)
    yield opened
    opened.close()


@pytest.fixture
def values(tmp_path: Path) -> ValueStore:
    return ValueStore(open_object_store(tmp_path / "values"))
