"""`Settings` read from an environment mapping, and what of them may be shown."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest

from trainforge.config import Settings, mask_url_password, redact_argument

PG = "postgresql+psycopg://alice:hunter2@db.example:5432/trainforge"


def test_defaults_live_under_a_home_in_the_current_folder(tmp_path: Path):
    settings = Settings.from_env({}, cwd=tmp_path)
    home = tmp_path / ".trainforge"
    assert settings.home == home
    assert settings.database_url.get_secret_value() == f"sqlite:///{home / 'trainforge.db'}"
    assert settings.artifact_root == str(home / "artifacts")
    assert (settings.spill_dir, settings.tensorboard_dir) == (home / "spill",
                                                              home / "tensorboard")


def test_each_variable_moves_one_thing(tmp_path: Path):
    settings = Settings.from_env({"TRAINFORGE_HOME": str(tmp_path / "h"), "TRAINFORGE_DB": PG,
                                  "TRAINFORGE_ARTIFACTS": "s3://bucket/team"})
    assert settings.home == tmp_path / "h" and settings.spill_dir == tmp_path / "h" / "spill"
    assert settings.database_url.get_secret_value() == PG
    assert settings.artifact_root == "s3://bucket/team"


def test_the_user_is_trainforge_user_else_the_os_user(tmp_path: Path):
    assert Settings.from_env({"TRAINFORGE_USER": "ann"}, cwd=tmp_path).user == "ann"
    assert Settings.from_env({}, cwd=tmp_path).user == getpass.getuser()


def test_the_database_password_is_never_shown():
    settings = Settings.from_env({"TRAINFORGE_DB": PG})
    for shown in (repr(settings), str(settings), str(settings.database_url),
                  settings.database_url_shown):
        assert "hunter2" not in shown
    assert settings.database_url_shown == (
        "postgresql+psycopg://alice:***@db.example:5432/trainforge")


@pytest.mark.parametrize("url", ["sqlite:////tmp/x.db", "postgresql://alice@db/x",
                                 "s3://bucket/prefix"])
def test_urls_without_a_password_are_shown_as_they_are(url: str):
    assert mask_url_password(url) == url


@pytest.mark.parametrize(("argument", "recorded"), [
    ("training.checkpoint.storage_options.secret=abc",
     "training.checkpoint.storage_options.secret=***"),
    ("training.checkpoint.storage_options.client_kwargs.aws_secret_access_key=abc",
     "training.checkpoint.storage_options.client_kwargs.aws_secret_access_key=***"),
    ("--token=abc", "--token=***"),
    ("training.epochs=3", "training.epochs=3"),
    (PG, "postgresql+psycopg://alice:***@db.example:5432/trainforge"),
    ("run", "run"),
])
def test_recorded_arguments_hide_credentials(argument: str, recorded: str):
    assert redact_argument(argument) == recorded


def test_settings_read_back_from_their_variables_in_another_folder(tmp_path: Path):
    relative = Settings.from_env({"TRAINFORGE_HOME": "home", "TRAINFORGE_DB": "sqlite:///db",
                                  "TRAINFORGE_ARTIFACTS": "artifacts", "TRAINFORGE_USER": "ann",
                                  "TRAINFORGE_PROFILE": "team"})

    elsewhere = Settings.from_env(relative.as_env(), cwd=tmp_path)

    cwd = Path.cwd()  # where `relative` was read: its relative paths stay there
    assert elsewhere.home == cwd / "home" and elsewhere.artifact_root == str(cwd / "artifacts")
    assert elsewhere.database_url.get_secret_value() == f"sqlite:///{cwd / 'db'}"
    assert (elsewhere.user, elsewhere.profile) == ("ann", "team")
    assert Settings.from_env({"TRAINFORGE_DB": PG}).as_env()["TRAINFORGE_DB"] == PG
