"""The store and artifact store of the test's isolated TRAINFORGE_HOME (see conftest), as the
CLI and `run_pipeline` open them from the environment."""

from __future__ import annotations

from trainforge.config import Settings
from trainforge.storage import SqlStore, open_store
from trainforge.storage.artifacts import ArtifactStore, open_artifact_store


def home_store() -> SqlStore:
    return open_store(Settings.from_env().database_url.get_secret_value())


def home_artifacts() -> ArtifactStore:
    return open_artifact_store(Settings.from_env().artifact_root)
