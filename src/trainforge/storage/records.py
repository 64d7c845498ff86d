"""ORM rows turned into the frozen records of `trainforge.entities` (rows never leave storage)."""

from __future__ import annotations

import math

from trainforge.entities import (
    DataVersion,
    Experiment,
    ModelStage,
    ModelVersion,
    Pipeline,
    Run,
    RunStatus,
    StageChange,
    StageOutcome,
    Webhook,
    WebhookDelivery,
)
from trainforge.storage.tables import (
    DataVersionRow,
    ExperimentRow,
    ModelVersionRow,
    PipelineRow,
    RunRow,
    StageChangeRow,
    WebhookDeliveryRow,
    WebhookRow,
    as_utc,
)


def to_experiment(row: ExperimentRow) -> Experiment:
    return Experiment(experiment_id=row.experiment_id, name=row.name,
                      description=row.description, owner=row.owner)


def metrics_json(metrics: dict[str, float]) -> dict[str, float | None]:
    """JSON has no NaN or infinity (PostgreSQL's JSONB refuses them): store those as null."""
    return {k: float(v) if math.isfinite(v) else None for k, v in metrics.items()}


def metrics_from_json(stored: dict[str, float | None]) -> dict[str, float]:
    return {k: float("nan") if v is None else float(v) for k, v in stored.items()}


def to_pipeline(row: PipelineRow) -> Pipeline:
    return Pipeline(pipeline_id=row.pipeline_id, name=row.name, dag_config=dict(row.dag_config),
                    schedule=row.schedule, created_by=row.created_by,
                    spec=None if row.spec is None else dict(row.spec),
                    registered_at=None if row.registered_at is None
                    else as_utc(row.registered_at))


def to_run(row: RunRow, metrics: dict[str, float]) -> Run:
    return Run(
        run_id=row.run_id, experiment_id=row.experiment_id, status=RunStatus(row.status),
        params=dict(row.params), metrics=metrics, tags=dict(row.tags),
        environment=dict(row.environment), artifact_uri=row.artifact_uri,
        started_at=as_utc(row.started_at),
        ended_at=None if row.ended_at is None else as_utc(row.ended_at),
        git_commit=row.git_commit, git_dirty=row.git_dirty,
        data_version_id=row.data_version_id, error=row.error, pipeline_id=row.pipeline_id,
        parent_run_id=row.parent_run_id,
        heartbeat_at=None if row.heartbeat_at is None else as_utc(row.heartbeat_at),
        device_hours=float(row.device_hours or 0.0), system=dict(row.system),
        spec_hash=row.spec_hash,
    )


def to_data_version(row: DataVersionRow) -> DataVersion:
    return DataVersion(data_version_id=row.data_version_id, source=row.source,
                       files=tuple(dict(f) for f in row.files), num_rows=row.num_rows,
                       created_at=as_utc(row.created_at))


def to_model_version(row: ModelVersionRow) -> ModelVersion:
    return ModelVersion(
        model_name=row.model_name, version=row.version, run_id=row.run_id,
        stage=ModelStage(row.stage), artifact_uri=row.artifact_uri,
        created_at=as_utc(row.created_at), metrics=metrics_from_json(row.metrics),
        data_version_id=row.data_version_id, git_commit=row.git_commit,
        features_hash=row.features_hash, environment=dict(row.environment or {}),
        label=row.label,
    )


def to_stage_change(row: StageChangeRow) -> StageChange:
    return StageChange(
        change_id=row.id, model_name=row.model_name, version=row.version,
        from_stage=None if row.from_stage is None else ModelStage(row.from_stage),
        to_stage=ModelStage(row.to_stage), outcome=StageOutcome(row.outcome), forced=row.forced,
        user=row.user, reason=row.reason, gate_report=tuple(dict(g) for g in row.gate_report),
        created_at=as_utc(row.created_at),
    )


def to_webhook(row: WebhookRow) -> Webhook:
    return Webhook(webhook_id=row.id, url=row.url, events=tuple(row.events),
                   secret_env=row.secret_env, created_at=as_utc(row.created_at))


def to_delivery(row: WebhookDeliveryRow) -> WebhookDelivery:
    return WebhookDelivery(
        delivery_id=row.id, webhook_id=row.webhook_id, event_id=row.event_id, event=row.event,
        attempt=row.attempt, status_code=row.status_code, error=row.error,
        delivered=row.delivered, created_at=as_utc(row.created_at),
        event_delivery_id=row.event_delivery_id,
    )
