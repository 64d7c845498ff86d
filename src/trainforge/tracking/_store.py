"""The tracking store contract: everything stages and services read or write in the database.

One SQL implementation (`trainforge.storage.SqlStore`) serves SQLite and PostgreSQL. Rules:
- every public method is one unit of work (its own transaction), safe to call from any thread;
- methods hand out frozen records from `trainforge.entities`, never ORM rows;
- a missing run / experiment / model raises `NotFound`; a duplicate key raises `Conflict`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from trainforge.entities import (
    DataVersion,
    Experiment,
    MetricPoint,
    ModelStage,
    ModelVersion,
    Pipeline,
    Run,
    RunStatus,
)


class TrackingStore(Protocol):
    url: str

    # experiments and pipelines
    def get_or_create_experiment(self, name: str, description: str = "") -> Experiment: ...
    def get_experiment(self, experiment_id: str) -> Experiment: ...
    def list_experiments(self) -> list[Experiment]: ...
    def upsert_pipeline(self, pipeline: Pipeline) -> Pipeline: ...

    # runs
    def create_run(
        self,
        experiment_id: str,
        params: dict[str, Any],
        environment: dict[str, Any],
        artifact_uri: str,
        git_commit: str | None = None,
        git_dirty: bool | None = None,
        pipeline_id: str | None = None,
        run_id: str | None = None,
    ) -> Run: ...
    def get_run(self, run_id: str) -> Run: ...
    def list_runs(
        self, experiment_id: str | None = None, status: RunStatus | None = None, limit: int = 100
    ) -> list[Run]: ...
    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None: ...
    def set_data_version(self, run_id: str, data_version_id: str) -> None: ...
    def set_summary_metrics(self, run_id: str, metrics: dict[str, float]) -> None: ...
    def end_run(
        self, run_id: str, status: RunStatus, error: str | None = None,
        ended_at: datetime | None = None,
    ) -> Run: ...

    # metric series
    def log_metrics(self, run_id: str, points: Sequence[MetricPoint]) -> None: ...
    def get_metric_history(self, run_id: str, key: str) -> list[MetricPoint]: ...
    def metric_keys(self, run_id: str) -> list[str]: ...

    # data versions
    def put_data_version(self, version: DataVersion) -> DataVersion: ...
    def get_data_version(self, data_version_id: str) -> DataVersion: ...

    # model registry
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
    def list_model_versions(self, model_name: str | None = None) -> list[ModelVersion]: ...
