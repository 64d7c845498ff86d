"""`Settings`: where trainforge keeps its state, read once at an entry point and passed down.

Entry points (the CLI, the server, a worker, `start_run` and the library functions called
without a store) call `Settings.from_env()`; nothing below them reads the environment. Variables:

    TRAINFORGE_HOME       folder of local state (default: `.trainforge` in the current folder)
    TRAINFORGE_DB         database URL (default: the SQLite file `<home>/trainforge.db`), or
                          `http(s)://host:port`: the store of `trainforge server`
    TRAINFORGE_TOKEN      the API token of that server (an editor's), made the password of
                          the URL and of its artifact proxy's
    TRAINFORGE_ARTIFACTS  artifact root: a folder or a URL such as `s3://bucket/prefix`
                          (default: `<home>/artifacts`; with a server's URL, the server's
                          artifact root through its proxy, `<server>/api/v1/objects`)
    TRAINFORGE_USER       who acts, as the model registry's stage history records it
                          (default: the operating system's user name)
    TRAINFORGE_CREDENTIALS  a YAML file of storage options by location (`Credentials.from_file`),
                          which a session opens those locations with (default: none)
    TRAINFORGE_PROFILE    a profile of that file whose locations go over its others
                          (default: none)

The database URL may hold a password, so it is a `SecretUrl`: its repr and `str()` are masked,
and `database_url_shown` renders it with the password hidden. `Settings` is a plain frozen
dataclass (four strings read from the environment need no pydantic model, and every CLI call
builds one before anything else). Object-store credentials
never appear here, only the path of a credentials file: fsspec reads them from its own
configuration or the environment (for S3, `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` or a
profile, and `AWS_ENDPOINT_URL` for an S3-compatible server such as MinIO), and a session
from that file (`Credentials.from_file`) or a spec.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ARTIFACT_PROXY_PATH = "/api/v1/objects"  # where `trainforge server` serves its artifact root


class SecretUrl:
    """A URL that may hold a password: `repr` and `str` show it masked; the value is read with
    `get_secret_value()` (as pydantic's `SecretStr`, which this avoids importing: a CLI call
    reads the settings before anything else)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"SecretUrl({mask_url_password(self._value)!r})"

    def __str__(self) -> str:
        return mask_url_password(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretUrl) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class Settings:
    """Immutable; build it with `from_env()` or directly (tests, embedding applications)."""

    home: Path
    database_url: SecretUrl
    artifact_root: str = field(repr=False)  # may hold a server's token: `artifact_root_shown`
    user: str = ""
    credentials_file: Path | None = None
    profile: str | None = None

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> Settings:
        """Settings from `environ` (default: the process environment), relative to `cwd`."""
        env = os.environ if environ is None else environ
        home = Path(env.get("TRAINFORGE_HOME") or (cwd or Path.cwd()) / ".trainforge")
        database = env.get("TRAINFORGE_DB") or f"sqlite:///{home / 'trainforge.db'}"
        server = database.startswith(("http://", "https://"))
        if server and env.get("TRAINFORGE_TOKEN"):
            database = with_password(database, env["TRAINFORGE_TOKEN"])
        return cls(
            home=home,
            database_url=SecretUrl(database),
            artifact_root=env.get("TRAINFORGE_ARTIFACTS") or (
                database.rstrip("/") + ARTIFACT_PROXY_PATH if server else str(home / "artifacts")),
            user=env.get("TRAINFORGE_USER") or _os_user(),
            credentials_file=Path(env["TRAINFORGE_CREDENTIALS"])
            if env.get("TRAINFORGE_CREDENTIALS") else None,
            profile=env.get("TRAINFORGE_PROFILE") or None,
        )

    def as_env(self) -> dict[str, str]:
        """The variables `from_env` reads these settings back from, in any folder: the home,
        a SQLite file and a local artifact root made absolute (for a process of these
        settings started elsewhere)."""
        url = self.database_url.get_secret_value()
        prefix = "sqlite:///"
        if url.startswith(prefix) and not url.startswith(prefix + "/"):
            url = prefix + str(Path(url[len(prefix):]).resolve())
        root = self.artifact_root
        env = {"TRAINFORGE_HOME": str(self.home.resolve()), "TRAINFORGE_DB": url,
               "TRAINFORGE_ARTIFACTS": root if "://" in root else str(Path(root).resolve()),
               "TRAINFORGE_USER": self.user}
        if self.credentials_file is not None:
            env["TRAINFORGE_CREDENTIALS"] = str(self.credentials_file.resolve())
        if self.profile is not None:
            env["TRAINFORGE_PROFILE"] = self.profile
        return env

    @property
    def spill_dir(self) -> Path:
        """Where runs keep what the database could not take (replayed later)."""
        return self.home / "spill"

    @property
    def tensorboard_dir(self) -> Path:
        return self.home / "tensorboard"

    def artifact_proxy_options(self) -> dict[str, dict[str, str]]:
        """Storage options by location that open the artifact root when it is a server's
        proxy holding a token (`http://:TOKEN@host/api/v1/objects`): the token, for the root
        without it, which is how the locations recorded in runs name it (their checkpoints);
        else none."""
        parts = urlsplit(self.artifact_root)
        if parts.scheme not in ("http", "https") or not parts.password:
            return {}
        root = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        return {root.rstrip("/"): {"token": parts.password}}

    @property
    def artifact_root_shown(self) -> str:
        """The artifact root with any password (a server's token) replaced by `***`."""
        return mask_url_password(self.artifact_root)

    @property
    def database_url_shown(self) -> str:
        """The database URL with any password replaced by `***`, for messages."""
        return mask_url_password(self.database_url.get_secret_value())


def _os_user() -> str:
    """The operating system's name for who runs this process ("" when it has none)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""


def with_password(url: str, password: str) -> str:
    """`url` with `password` (and no user) in place of its user and password."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f":{password}@{host}"))


def mask_url_password(url: str) -> str:
    """`url` with the password of its `user:password@` part replaced by `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user.partition(':')[0]}:***@{host}"))
