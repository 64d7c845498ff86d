"""One fraud pipeline run (1 epoch) in a home of its own, shared by the tests of a module or
session: its settings, store, artifact store, run and registered version (stage staging)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from fraud_fixtures import copy_fraud_project

from trainforge.config import Settings
from trainforge.entities import ModelStage, ModelVersion
from trainforge.pipeline import run_pipeline
from trainforge.session import Session
from trainforge.storage import RegistryStore, Store, open_store
from trainforge.storage.artifacts import ArtifactStore, open_artifact_store


@dataclass(frozen=True)
class TrainedFraud:
    home: Path
    settings: Settings
    store: Store
    artifacts: ArtifactStore
    run_id: str
    version: ModelVersion

    @property
    def env(self) -> dict[str, str]:
        """The environment variables that point the CLI at this home."""
        return {"TRAINFORGE_HOME": str(self.home),
                "TRAINFORGE_DB": self.settings.database_url.get_secret_value(),
                "TRAINFORGE_ARTIFACTS": self.settings.artifact_root}

    def golden(self) -> pd.DataFrame:
        return pd.read_parquet(io.BytesIO(self.artifacts.get_bytes(self.run_id,
                                                                   "evaluation/test.parquet")))

    def register(self, stage: ModelStage) -> ModelVersion:
        """Another version of the same run, registered and moved straight into `stage`."""
        version = self.store.create_model_version(
            self.version.model_name, self.run_id, self.version.artifact_uri,
            ModelStage.STAGING, metrics=self.version.metrics,
            data_version_id=self.version.data_version_id, git_commit=self.version.git_commit)
        return place_in_stage(self.store, version, stage)


def place_in_stage(store: RegistryStore, version: ModelVersion,
                   stage: ModelStage) -> ModelVersion:
    """Move a staging version into `stage` without gates, archiving the stage's holder (what a
    forced promotion does to the store)."""
    if stage is ModelStage.STAGING:
        return version
    holder = store.get_stage_holder(version.model_name, stage)
    store.change_stage(version.model_name, version.version, stage,
                       expected_from=ModelStage.STAGING,
                       expected_holder=None if holder is None else holder.version,
                       user="test", reason="placed by a test")
    return store.get_model_version(version.model_name, version.version)


def train_fraud(root: Path, data: Path, *overrides: str) -> TrainedFraud:
    """Run the fraud example on `data` (a generated slice) under `root`."""
    project = copy_fraud_project(root / "project", data)
    home = root / "home"
    settings = Settings.from_env({"TRAINFORGE_HOME": str(home)})
    store = open_store(settings.database_url.get_secret_value())
    artifacts = open_artifact_store(settings.artifact_root)
    result = run_pipeline(project / "pipeline.yaml", ["training.epochs=1", *overrides],
                          session=Session(settings, store, artifacts))
    assert result.model_version is not None
    return TrainedFraud(home, settings, store, artifacts, result.run.run_id,
                        result.model_version)
