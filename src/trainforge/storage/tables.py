"""The whole data model of the tracking database, in one module.

Rules every table follows:
- timestamps are timezone-aware UTC on the way in and on the way out (`UTCDateTime`), also on
  SQLite, which stores them naive;
- JSON columns are JSONB on PostgreSQL and JSON text on SQLite, and always hold plain
  dicts / lists;
- enums (`RunStatus`, `ModelStage`, `Role`) are stored as their string value;
- these rows never leave `trainforge.storage`: the store converts them to `trainforge.entities`.

A change here needs a new revision in `migrations/versions/`; `tests/storage/test_migrations.py`
fails while the two disagree.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# Explicit constraint names keep migrations identical on SQLite and PostgreSQL.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JsonType = JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend.

    Naive values are taken to be UTC; aware ones are converted to UTC before they are stored.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


def as_utc(value: datetime) -> datetime:
    """`value` as an aware UTC datetime; a naive value is read as UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JsonType, list[Any]: JsonType, datetime: UTCDateTime
    }


class PipelineRow(Base):
    __tablename__ = "pipelines"

    pipeline_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    dag_config: Mapped[dict[str, Any]]
    schedule: Mapped[str | None] = mapped_column(String(255))
    created_by: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # a registered pipeline's resolved spec and when it was registered (NULL: recorded by runs)
    spec: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    registered_at: Mapped[datetime | None]


class ExperimentRow(Base):
    __tablename__ = "experiments"

    experiment_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    owner: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class DataVersionRow(Base):
    __tablename__ = "data_versions"

    data_version_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    source: Mapped[str] = mapped_column(Text)
    files: Mapped[list[Any]]
    num_rows: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class DataTagRow(Base):
    """`name@tag` → a data version; setting a tag again moves it."""

    __tablename__ = "data_tags"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    tag: Mapped[str] = mapped_column(String(255), primary_key=True)
    data_version_id: Mapped[str] = mapped_column(
        String(128), ForeignKey("data_versions.data_version_id")
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class DataProfileRow(Base):
    """A stored data profile (JSON): of one file (`kind` "file", keyed by its sha256) or of a
    data version (`kind` "version", keyed by its id)."""

    __tablename__ = "data_profiles"

    profile_key: Mapped[str] = mapped_column(String(128), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    rows: Mapped[int] = mapped_column(BigInteger)
    profile: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PipelineRunRow(Base):
    """One execution of a pipeline's DAG; its steps' attempts are `step_runs`."""

    __tablename__ = "pipeline_runs"
    __table_args__ = (Index("ix_pipeline_runs_pipeline_id_started_at", "pipeline_id",
                            "started_at"),)

    pipeline_run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    pipeline_id: Mapped[str] = mapped_column(ForeignKey("pipelines.pipeline_id"))
    status: Mapped[str] = mapped_column(String(16))
    source: Mapped[dict[str, Any]]
    options: Mapped[dict[str, Any]]
    run_id: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None]


class StepRunRow(Base):
    """One attempt of one step of a pipeline run. A cache lookup finds the newest row with the
    key whose state has outputs (`ix_step_runs_cache_key`)."""

    __tablename__ = "step_runs"
    __table_args__ = (Index("ix_step_runs_pipeline_run_id_step", "pipeline_run_id", "step"),
                      Index("ix_step_runs_cache_key", "cache_key"))

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    pipeline_run_id: Mapped[str] = mapped_column(ForeignKey("pipeline_runs.pipeline_run_id"))
    step: Mapped[str] = mapped_column(String(255))
    attempt: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[datetime | None]
    ended_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    cache_key: Mapped[str | None] = mapped_column(String(64))
    cache_parts: Mapped[dict[str, Any]]
    outputs: Mapped[dict[str, Any]]
    cached_from: Mapped[int | None] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"))


class RunRow(Base):
    """A run. Its metrics live in `run_metrics` (latest values and summary) and `metrics` (series).

    `parent_run_id` is checked by the store, not by a foreign key: SQLite cannot add one to an
    existing table without rebuilding it. `device_hours` only grows (heartbeats add to it).
    `params` and `tags` are the user's; `system` is what trainforge reads back (liveness,
    checkpoint location and policy, the spec a run started with) and `spec_hash` the hash of
    the resolved spec a pipeline run executes.
    """

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_experiment_id_started_at", "experiment_id", "started_at"),)

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    experiment_id: Mapped[str] = mapped_column(ForeignKey("experiments.experiment_id"))
    pipeline_id: Mapped[str | None] = mapped_column(ForeignKey("pipelines.pipeline_id"))
    parent_run_id: Mapped[str | None] = mapped_column(String(64), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    params: Mapped[dict[str, Any]]
    tags: Mapped[dict[str, Any]]
    system: Mapped[dict[str, Any]] = mapped_column(server_default="{}")
    spec_hash: Mapped[str | None] = mapped_column(String(64), index=True)
    environment: Mapped[dict[str, Any]]
    artifact_uri: Mapped[str] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    ended_at: Mapped[datetime | None]
    heartbeat_at: Mapped[datetime | None]
    device_hours: Mapped[float] = mapped_column(Double, default=0.0, server_default="0")
    git_commit: Mapped[str | None] = mapped_column(String(64))
    git_dirty: Mapped[bool | None] = mapped_column(Boolean)
    data_version_id: Mapped[str | None] = mapped_column(
        ForeignKey("data_versions.data_version_id")
    )
    error: Mapped[str | None] = mapped_column(Text)


class MetricRow(Base):
    """One point of a metric series; `value` NULL stands for NaN (SQLite cannot store NaN)."""

    __tablename__ = "metrics"
    __table_args__ = (Index("ix_metrics_run_id_key_step", "run_id", "key", "step"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.run_id"))
    key: Mapped[str] = mapped_column(String(255))
    step: Mapped[int] = mapped_column(BigInteger)
    timestamp: Mapped[float] = mapped_column(Double)
    value: Mapped[float | None] = mapped_column(Double)


class RunMetricRow(Base):
    """What filters, sorts and `Run.metrics` see for `metrics.<key>`: the run's summary value
    when one was set (`is_summary`), else its last logged point (highest step, then latest
    timestamp). `value` NULL stands for NaN. Indexed by (key, value) so that sorting every run
    by one metric reads the index in order."""

    __tablename__ = "run_metrics"
    __table_args__ = (Index("ix_run_metrics_key_value", "key", "value"),)

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.run_id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[float | None] = mapped_column(Double)
    step: Mapped[int] = mapped_column(BigInteger)
    timestamp: Mapped[float] = mapped_column(Double)
    is_summary: Mapped[bool] = mapped_column(Boolean)


class MetricBatchRow(Base):
    """The ids of metric batches already stored, so that replaying a batch (after a lost
    commit acknowledgement or from a spill file) never duplicates its points."""

    __tablename__ = "metric_batches"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.run_id"), primary_key=True)
    batch_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class CheckpointRow(Base):
    """A checkpoint a run saved at `step`. `metrics` holds null for NaN and infinities (JSON has
    neither). `deleted_at` is set once its files were deleted; the row stays, so the run's
    history still lists it."""

    __tablename__ = "checkpoints"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.run_id"), primary_key=True)
    step: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    uri: Mapped[str] = mapped_column(String(1024))
    epoch: Mapped[int | None] = mapped_column(Integer)
    metrics: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None]


# The stages a model holds at most one version in; the partial unique index enforces it.
SINGLE_HOLDER_STAGES = "stage IN ('production', 'canary')"


class ModelVersionRow(Base):
    """A registered model version and its lineage (run, data version, git commit, the feature
    pipeline's content hash, a summary of the environment it was trained in). At most one
    version of a model is in `production` and one in `canary` (a partial unique index).
    `label` is the version its client named it (NULL when none), unique per model: NULLs never
    collide in a unique index, on SQLite as on PostgreSQL."""

    __tablename__ = "model_versions"
    __table_args__ = (
        Index("uq_model_versions_single_holder", "model_name", "stage", unique=True,
              sqlite_where=text(SINGLE_HOLDER_STAGES),
              postgresql_where=text(SINGLE_HOLDER_STAGES)),
        Index("uq_model_versions_label", "model_name", "label", unique=True),
    )

    model_name: Mapped[str] = mapped_column(String(255), primary_key=True)
    version: Mapped[str] = mapped_column(String(32), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.run_id"))
    stage: Mapped[str] = mapped_column(String(16))
    artifact_uri: Mapped[str] = mapped_column(Text)
    metrics: Mapped[dict[str, Any]]
    data_version_id: Mapped[str | None] = mapped_column(String(128))
    git_commit: Mapped[str | None] = mapped_column(String(64))
    features_hash: Mapped[str | None] = mapped_column(String(64))
    environment: Mapped[dict[str, Any]] = mapped_column(server_default="{}")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    label: Mapped[str | None] = mapped_column(String(64))


class StageChangeRow(Base):
    """One entry of a model's stage history, oldest first by `id`: a registration
    (`from_stage` NULL), a promotion, a promotion refused by its gates (`outcome` "refused",
    the stage unchanged) or a holder replaced by a promotion ("replaced"). `gate_report` is the
    list of gate results the decision was taken on; `forced` marks a failed gate overridden."""

    __tablename__ = "model_stage_changes"
    __table_args__ = (
        ForeignKeyConstraint(["model_name", "version"],
                             ["model_versions.model_name", "model_versions.version"]),
        Index("ix_model_stage_changes_model_name_id", "model_name", "id"),
    )

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    model_name: Mapped[str] = mapped_column(String(255))
    version: Mapped[str] = mapped_column(String(32))
    from_stage: Mapped[str | None] = mapped_column(String(16))
    to_stage: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(16))
    forced: Mapped[bool] = mapped_column(Boolean)
    user: Mapped[str] = mapped_column(String(255))
    reason: Mapped[str] = mapped_column(Text)
    gate_report: Mapped[list[Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ModelAliasRow(Base):
    """A name for one version of a model (`fraud_detector@champion`); set again, it moves."""

    __tablename__ = "model_aliases"
    __table_args__ = (
        ForeignKeyConstraint(["model_name", "version"],
                             ["model_versions.model_name", "model_versions.version"]),
    )

    model_name: Mapped[str] = mapped_column(String(255), primary_key=True)
    alias: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookRow(Base):
    """A webhook subscription: where events are POSTed and which ones. The signing secret is
    never stored: `secret_env` names the environment variable holding it."""

    __tablename__ = "webhooks"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[Any]]
    secret_env: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookDeliveryRow(Base):
    """One attempt to deliver one event to one webhook: its HTTP status (NULL when no response
    came) or error, and whether it was delivered (a 2xx answer)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_webhook_id_id", "webhook_id", "id"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    webhook_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), ForeignKey("webhooks.id"))
    event_id: Mapped[str] = mapped_column(String(64))
    event: Mapped[str] = mapped_column(String(64))
    attempt: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    delivered: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    event_delivery_id: Mapped[int | None] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), ForeignKey("event_deliveries.id"))


class OutboxEventRow(Base):
    """An event written in the transaction of what it announces, in order of writing (`id`).
    A stage change's event points at its history entry (`stage_change_id`, `data` NULL); any
    other event holds its `data`. `subject` is what deliveries keep in order (`model:NAME`,
    `run:RUN_ID`)."""

    __tablename__ = "outbox_events"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    event_id: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(320))
    stage_change_id: Mapped[int | None] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), ForeignKey("model_stage_changes.id"))
    data: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)


class EventDeliveryRow(Base):
    """The delivery of one outbox event to one webhook: its state ("pending", "delivered",
    "dead"), attempts (all, and this round's since `round_started_at`), when the next attempt
    is due, and the lease a deliverer holds while it sends (`lease_owner` until
    `leased_until`). `subject` and `outbox_id` repeat the event's, so that the order check
    (no earlier pending event of the subject for the webhook) reads this table only."""

    __tablename__ = "event_deliveries"
    __table_args__ = (
        Index("ix_event_deliveries_state_next_attempt_at", "state", "next_attempt_at"),
        Index("ix_event_deliveries_webhook_id_subject_outbox_id", "webhook_id", "subject",
              "outbox_id"),
    )

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    outbox_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), ForeignKey("outbox_events.id"))
    webhook_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), ForeignKey("webhooks.id"))
    subject: Mapped[str] = mapped_column(String(320))
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    round_attempts: Mapped[int] = mapped_column(Integer, default=0)
    round_started_at: Mapped[datetime]
    next_attempt_at: Mapped[datetime]
    leased_until: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class TuningJournalRow(Base):
    """One operation of Optuna's journal (a study created, a trial's parameter or state set),
    as JSON text. `log_number` is dense from 0 and totally ordered: the journal backend assigns
    the next number under a database-wide lock, so replaying the rows in order rebuilds every
    study on every worker."""

    __tablename__ = "tuning_journal"

    log_number: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    body: Mapped[str] = mapped_column(Text)


class TuningHeartbeatRow(Base):
    """The latest heartbeat of a running Optuna trial (its id in the journal): a trial whose
    heartbeat went stale belongs to a worker that died, and is failed and retried."""

    __tablename__ = "tuning_heartbeats"

    trial_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    heartbeat_at: Mapped[datetime]


class UserRow(Base):
    """A user of `trainforge server` and the most a token of theirs may do (`Role`'s value)."""

    __tablename__ = "users"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiTokenRow(Base):
    """An API token of a user. `secret_hash` is the SHA-256 (hex) of its secret; the secret
    itself is never stored. `expires_at` NULL: it never expires; `revoked_at` NULL: not
    revoked; `last_used_at` NULL: never used. Indexed by (user, created_at, token_id): the
    order a user's tokens are listed in."""

    __tablename__ = "api_tokens"
    __table_args__ = (Index("ix_api_tokens_user_created_at_token_id", "user", "created_at",
                            "token_id"),)

    token_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user: Mapped[str] = mapped_column(ForeignKey("users.name"))
    role: Mapped[str] = mapped_column(String(16))
    secret_hash: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
