"""`open_store(url)` picks the backend by the URL's scheme and never shows a password."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from trainforge.config import Settings
from trainforge.errors import DatabaseNotFound, StoreError
from trainforge.storage import SqlStore, open_store
from trainforge.storage.rest_store import RestStore


def test_sql_urls_open_the_sql_store(db_url: str) -> None:
    store = open_store(db_url)
    try:
        assert isinstance(store, SqlStore)
        assert store.list_experiments().items == ()
    finally:
        store.close()


def test_the_default_url_comes_from_the_settings(_isolated_home: Path) -> None:
    store = open_store(Settings.from_env().database_url.get_secret_value())
    try:
        store.get_or_create_experiment("e")
        assert (_isolated_home / "trainforge.db").is_file()
    finally:
        store.close()


@pytest.mark.parametrize("url", ["http://:secret@tracking:8080", "https://tracking.example"])
def test_a_server_url_opens_the_servers_store_without_showing_its_token(url: str) -> None:
    store = open_store(url)  # nothing is sent until a method is called
    assert isinstance(store, RestStore)
    assert "secret" not in repr(store) + str(store)
    store.close()


@pytest.mark.parametrize(("url", "shown"), [
    ("mysql+pymysql://root:secret@db/runs", "mysql+pymysql://root:***@db/runs"),
    ("s3://bucket/runs.db", "s3://bucket/runs.db"),
    ("runs.db", "runs.db"),
    ("", ""),
])
def test_an_unknown_scheme_is_refused_listing_the_accepted_ones(url: str, shown: str) -> None:
    with pytest.raises(StoreError) as raised:
        open_store(url)
    message = str(raised.value)
    assert f"unsupported store URL {shown!r}" in message
    for scheme in ["sqlite", "postgresql", "http", "https"]:
        assert scheme in message
    assert "secret" not in message


def test_a_url_too_malformed_to_parse_is_not_shown() -> None:
    with pytest.raises(StoreError, match="unsupported store URL '<malformed URL>'"):
        open_store("postgres://root:secret@[::1")


def test_create_false_refuses_a_missing_database_and_creates_nothing(db_url: str) -> None:
    with pytest.raises(DatabaseNotFound) as raised:
        open_store(db_url, create=False)
    if db_url.startswith("sqlite"):
        path = Path(db_url.removeprefix("sqlite:///"))
        assert str(raised.value) == f"no trainforge database at {path}: the file does not exist"
        assert not path.parent.exists()
    else:
        assert str(raised.value).endswith(": it holds no trainforge tables")
        engine = create_engine(db_url)
        try:
            assert inspect(engine).get_table_names() == []
        finally:
            engine.dispose()
    open_store(db_url).close()
    store = open_store(db_url, create=False)
    try:
        assert store.list_experiments().items == ()
    finally:
        store.close()


def test_create_false_refuses_a_sqlite_file_without_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    path.touch()
    with pytest.raises(DatabaseNotFound, match=f"at {path}: it holds no trainforge tables"):
        open_store(f"sqlite:///{path}", create=False)
