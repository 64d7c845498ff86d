"""The tracking store contract: everything stages and services read or write in the database.

One SQL implementation (`trainforge.storage.SqlStore`) serves SQLite and PostgreSQL. Rules:
- every public method is one unit of work (its own transaction), safe to call from any thread;
- methods hand out frozen records from `trainforge.entities`, never ORM rows;
- a missing run / experiment / model raises `NotFound`; a duplicate key raises `Conflict`;
- a database that cannot be reached raises `StoreUnavailable` (callers may spill and retry);
- `Run.metrics` holds, per key, the summary value when set, else the last logged point;
- `log_metrics` with a `batch_id` is idempotent (a stored batch is skipped whole, False);
- a run resuming from the checkpoint of step N calls `delete_metrics_after(run_id, N)` first,
  so that the points its crashed attempt logged after N are not kept twice;
- a checkpoint record is keyed by (run, step): recording a step again overwrites it. Deleting a
  checkpoint's files marks its record deleted (the first time is kept); the record stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from trainforge.entities import (
    CheckpointRecord,
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
        parent_run_id: str | None = None,
        tags: dict[str, Any] | None = None,
        system: dict[str, Any] | None = None,
        spec_hash: str | None = None,
    ) -> Run: ...
    def get_run(self, run_id: str) -> Run: ...
    def list_runs(
        self, experiment_id: str | None = None, status: RunStatus | None = None, limit: int = 100,
        *, pipeline_id: str | None = None, spec_hash: str | None = None,
    ) -> list[Run]: ...
    def search_runs(
        self,
        experiment_ids: Sequence[str] | None = None,
        filter: str | None = None,
        sort: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Run]: ...
    def log_params(self, run_id: str, params: dict[str, Any]) -> None: ...
    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None: ...
    def set_system(self, run_id: str, values: dict[str, Any]) -> None: ...
    def set_data_version(self, run_id: str, data_version_id: str) -> None: ...
    def set_summary_metrics(self, run_id: str, metrics: dict[str, float]) -> None: ...
    def end_run(
        self, run_id: str, status: RunStatus, error: str | None = None,
        ended_at: datetime | None = None,
    ) -> Run: ...
    def reopen_run(self, run_id: str) -> Run: ...
    def heartbeat(self, run_id: str, device_hours: float = 0.0) -> None: ...
    def mark_crashed(self, heartbeat_before: datetime) -> list[Run]: ...

    # metric series
    def log_metrics(
        self, run_id: str, points: Sequence[MetricPoint], batch_id: str | None = None
    ) -> bool: ...
    def get_metric_history(
        self, run_id: str, key: str, max_points: int | None = None
    ) -> list[MetricPoint]: ...
    def metric_keys(self, run_id: str) -> list[str]: ...
    def delete_metrics_after(self, run_id: str, step: int) -> int: ...

    # checkpoints
    def record_checkpoint(
        self, run_id: str, step: int, uri: str, epoch: int | None = None,
        metrics: dict[str, float] | None = None,
    ) -> CheckpointRecord: ...
    def mark_checkpoint_deleted(self, run_id: str, step: int) -> None: ...
    def list_checkpoints(
        self, run_id: str, include_deleted: bool = False
    ) -> list[CheckpointRecord]: ...

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
