"""`Settings`: where trainforge keeps its state, read once at an entry point and passed down.

Entry points (the CLI, the server, a worker, `start_run` and the library functions called
without a store) call `Settings.from_env()`; nothing below them reads the environment. Variables:

    TRAINFORGE_HOME       folder of local state (default: `.trainforge` in the current folder)
    TRAINFORGE_DB         database URL (default: the SQLite file `<home>/trainforge.db`)
    TRAINFORGE_ARTIFACTS  artifact root: a folder or a URL such as `s3://bucket/prefix`
                          (default: `<home>/artifacts`)

The database URL may hold a password, so it is a `SecretStr`: its repr, `str()` and dumps are
masked, and `database_url_shown` renders it with the password hidden. Object-store credentials
never appear here: fsspec reads them from its own configuration or the environment (for S3,
`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` or a profile, and `AWS_ENDPOINT_URL` for an
S3-compatible server such as MinIO).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, SecretStr


class Settings(BaseModel):
    """Immutable; build it with `from_env()` or directly (tests, embedding applications)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path
    database_url: SecretStr
    artifact_root: str

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> Settings:
        """Settings from `environ` (default: the process environment), relative to `cwd`."""
        env = os.environ if environ is None else environ
        home = Path(env.get("TRAINFORGE_HOME") or (cwd or Path.cwd()) / ".trainforge")
        return cls(
            home=home,
            database_url=SecretStr(
                env.get("TRAINFORGE_DB") or f"sqlite:///{home / 'trainforge.db'}"),
            artifact_root=env.get("TRAINFORGE_ARTIFACTS") or str(home / "artifacts"),
        )

    @property
    def spill_dir(self) -> Path:
        """Where runs keep what the database could not take (replayed later)."""
        return self.home / "spill"

    @property
    def tensorboard_dir(self) -> Path:
        return self.home / "tensorboard"

    @property
    def database_url_shown(self) -> str:
        """The database URL with any password replaced by `***`, for messages."""
        return mask_url_password(self.database_url.get_secret_value())


def mask_url_password(url: str) -> str:
    """`url` with the password of its `user:password@` part replaced by `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user.partition(':')[0]}:***@{host}"))
