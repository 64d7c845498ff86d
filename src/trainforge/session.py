"""`Session`: what an entry point opens once and passes down, so nothing below it reads the
environment or holds process-wide state for a run.

    settings     where things live (`Settings`: home, database URL, artifact root)
    store        the SQL store of the settings' database
    artifacts    the artifact store under the settings' artifact root
    user         who acts (`TRAINFORGE_USER`, else the operating system's user)
    events       where its events about runs go (`EventPublisher`: the store's outbox)
    credentials  storage options by location (`Credentials`): the token of a server's
                 artifact proxy (`Settings.artifact_proxy_options`), the credentials file's
                 (`TRAINFORGE_CREDENTIALS`, its named profile `TRAINFORGE_PROFILE` over the
                 rest), and a spec's for its data source and checkpoint
                 location over them, given by the entry point that holds the spec; never
                 recorded

Entry points open one (`Session.open`): `run_pipeline` and the CLI's commands that run a
pipeline, a torchrun worker, a tuning study and its workers. The store is opened on first use
(so a spec refused before it creates no database), and the spill files earlier runs left then
start replaying into it in the background. A pipeline run adds its spec's
credentials (`with_credentials(spec.credentials())`), so two pipelines in one process on one
source with different options each read with their own. A session's value store
(`orchestration.values.value_store`) hands its credentials to the decoders of stored values (a
listing reopening its source).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from trainforge.config import Credentials, Settings
from trainforge.errors import SpecError
from trainforge.storage import Store
from trainforge.storage.artifacts import ArtifactStore, open_artifact_store

if TYPE_CHECKING:
    from trainforge.events import EventPublisher


class Session:
    """The settings, store, artifact store and credentials an entry point passes down."""

    def __init__(self, settings: Settings, store: Store | None = None,
                 artifacts: ArtifactStore | None = None,
                 credentials: Credentials | None = None) -> None:
        self.settings = settings
        self.credentials = credentials or Credentials()
        self._opened = _Opened(settings, store, artifacts)

    @classmethod
    def open(cls, settings: Settings | None = None, store: Store | None = None,
             artifacts: ArtifactStore | None = None,
             credentials: Credentials | None = None) -> Session:
        """A session of `settings` (default: the environment's, read here, at the entry
        point); what is not given is opened from them on first use. Its credentials are
        those of the settings' credentials file (`TRAINFORGE_CREDENTIALS`, with its profile
        `TRAINFORGE_PROFILE` over the rest), with `credentials` over them; `SpecError` naming
        the file when it does not read, or the profile it lacks."""
        settings = settings or Settings.from_env()
        if settings.credentials_file is not None:
            given = Credentials.from_file(settings.credentials_file, settings.profile)
        elif settings.profile is not None:
            raise SpecError([f"TRAINFORGE_PROFILE={settings.profile} names a profile of the "
                             "credentials file, and TRAINFORGE_CREDENTIALS names none"])
        else:
            given = Credentials()
        proxy = Credentials(settings.artifact_proxy_options())
        return cls(settings, store, artifacts,
                   proxy.merged(given).merged(credentials or Credentials()))

    @property
    def events(self) -> EventPublisher:
        """Where this session's events about runs go: the store's outbox."""
        from trainforge.events import OutboxPublisher

        return OutboxPublisher(self.store)

    @property
    def user(self) -> str:
        """Who acts in this session (`TRAINFORGE_USER`, else the operating system's user):
        what a run's process record and the registry's stage history name."""
        return self.settings.user

    @property
    def store(self) -> Store:
        """The store of the settings' database, created when missing (on first use)."""
        return self._opened.store()

    @property
    def artifacts(self) -> ArtifactStore:
        """The artifact store under the settings' artifact root."""
        return self._opened.artifacts()

    def with_credentials(self, credentials: Credentials) -> Session:
        """This session (the same store and artifact store), with `credentials`' entries
        over its own."""
        derived = Session(self.settings, credentials=self.credentials.merged(credentials))
        derived._opened = self._opened
        return derived

    def __repr__(self) -> str:
        return f"Session(home={str(self.settings.home)!r}, credentials={self.credentials!r})"


class _Opened:
    """The store and artifact store of a session and those derived from it, each opened
    once, on first use."""

    def __init__(self, settings: Settings, store: Store | None,
                 artifacts: ArtifactStore | None) -> None:
        self._settings = settings
        self._store = store
        self._artifacts = artifacts
        self._lock = threading.Lock()

    def store(self) -> Store:
        from trainforge.tracking import default_store, replay_in_background

        with self._lock:
            if self._store is None:
                self._store = default_store(self._settings)
                replay_in_background(self._store, self._settings.spill_dir)
            return self._store

    def artifacts(self) -> ArtifactStore:
        with self._lock:
            if self._artifacts is None:
                self._artifacts = open_artifact_store(self._settings.artifact_root)
            return self._artifacts
