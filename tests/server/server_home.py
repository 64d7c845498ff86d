"""A fresh home for the server tests: its session, and an editor with an API token."""

from __future__ import annotations

from pathlib import Path

from trainforge.config import Settings
from trainforge.entities import Role
from trainforge.server import issue_token
from trainforge.session import Session


def editor_session(home: Path, user: str) -> tuple[Session, str]:
    """A session over `home` whose store knows `user` as an editor, and a token of theirs."""
    session = Session.open(Settings.from_env({"TRAINFORGE_HOME": str(home)}))
    session.store.add_user(user, Role.EDITOR)
    token, _ = issue_token(session.store, user)
    return session, token
