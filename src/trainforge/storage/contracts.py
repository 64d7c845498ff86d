"""Store contracts per area (placeholder until the per-area split lands)."""

from __future__ import annotations

from typing import Protocol

from trainforge.entities import ModelStage, ModelVersion


class RegistryStore(Protocol):
    def create_model_version(
        self,
        model_name: str,
        run_id: str,
        artifact_uri: str,
        stage: ModelStage,
        metrics: dict[str, float],
        data_version_id: str | None = None,
        git_commit: str | None = None,
    ) -> ModelVersion: ...

    def get_model_version(self, model_name: str, version: str) -> ModelVersion: ...
