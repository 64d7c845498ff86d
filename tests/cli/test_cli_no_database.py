"""Commands run where there is no database (in-process): those that only read say so and
create nothing; those that write create it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainforge.cli import app

READ_ONLY = [
    ["runs", "list"],
    ["runs", "show", "abc"],
    ["runs", "compare", "abc", "def"],
    ["runs", "history", "abc", "loss"],
    ["runs", "replay"],
    ["models", "list"],
    ["models", "show", "fraud_detector"],
    ["checkpoints", "list", "abc"],
]


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current folder, and no TRAINFORGE_HOME: the home would be `./.trainforge`."""
    monkeypatch.delenv("TRAINFORGE_HOME")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_a_read_only_command_names_the_missing_database_and_creates_none(
    elsewhere: Path, args: list[str], json_flag: list[str]
) -> None:
    result = CliRunner().invoke(app, [*args, *json_flag])
    assert result.exit_code == 1, result.output
    database = elsewhere / ".trainforge" / "trainforge.db"
    assert result.stderr.splitlines() == [
        f"no trainforge database at {database}: the file does not exist",
        "point at one with TRAINFORGE_HOME=<folder holding trainforge.db> or "
        "TRAINFORGE_DB=<database URL>; `trainforge run` creates one",
    ]
    assert result.stdout == ""
    assert list(elsewhere.iterdir()) == []


def test_a_database_url_without_the_schema_is_named_and_left_alone(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = elsewhere / "empty.db"
    empty.touch()
    monkeypatch.setenv("TRAINFORGE_DB", f"sqlite:///{empty}")
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exit_code == 1
    assert f"no trainforge database at {empty}: it holds no trainforge tables" in result.stderr
    assert [path.name for path in elsewhere.iterdir()] == ["empty.db"]


@pytest.mark.parametrize("args", [["runs", "gc"], ["checkpoints", "gc", "abc"]], ids=" ".join)
def test_a_command_that_writes_creates_the_database(elsewhere: Path, args: list[str]) -> None:
    CliRunner().invoke(app, args)
    assert (elsewhere / ".trainforge" / "trainforge.db").is_file()
