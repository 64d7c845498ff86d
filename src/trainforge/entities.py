"""Frozen records shared by stages and services.

The store hands these out; ORM rows never leave `trainforge.storage`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class RunStatus(str, enum.Enum):
    """`crashed`: the process died without ending the run (its heartbeat went stale);
    `preempted`: the run was stopped from outside and may be resumed from a checkpoint;
    `pruned`: a tuning study's pruner stopped the trial's training early (not a failure)."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CRASHED = "crashed"
    PREEMPTED = "preempted"
    PRUNED = "pruned"

    @property
    def is_terminal(self) -> bool:
        return self is not RunStatus.RUNNING


class ModelStage(str, enum.Enum):
    """Where a model version stands: `none` (registered without its gates passing), `staging`
    (registered with them passing: a candidate), `canary` (serves a share of traffic; at most
    one per model), `production` (serves the rest; at most one per model), `archived` (retired;
    restorable to staging). `trainforge.registry` says which moves are allowed."""

    NONE = "none"
    STAGING = "staging"
    CANARY = "canary"
    PRODUCTION = "production"
    ARCHIVED = "archived"


@dataclass(frozen=True)
class Experiment:
    experiment_id: str
    name: str
    description: str = ""
    owner: str = ""


@dataclass(frozen=True)
class Run:
    """A tracked run. `params` and `tags` belong to the user; `system` is what trainforge reads
    back (liveness host and pid, checkpoint location and policy, the spec path and overrides
    it started with), never mixed into them; `spec_hash` is the hash of the resolved spec a
    pipeline run executes."""

    run_id: str
    experiment_id: str
    status: RunStatus
    params: dict[str, Any]
    metrics: dict[str, float]
    tags: dict[str, Any]
    environment: dict[str, Any]
    artifact_uri: str
    started_at: datetime
    ended_at: datetime | None
    git_commit: str | None
    git_dirty: bool | None
    data_version_id: str | None
    error: str | None
    pipeline_id: str | None = None
    parent_run_id: str | None = None
    heartbeat_at: datetime | None = None
    device_hours: float = 0.0
    system: dict[str, Any] = field(default_factory=dict)
    spec_hash: str | None = None

    @property
    def duration_s(self) -> float | None:
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class MetricPoint:
    key: str
    value: float
    step: int
    timestamp: float


@dataclass(frozen=True)
class DataVersion:
    """A content-addressed name for exactly the files a run read."""

    data_version_id: str
    source: str
    files: tuple[dict[str, Any], ...]
    num_rows: int
    created_at: datetime | None = None


@dataclass(frozen=True)
class DataTag:
    """`name@tag` pointing at a data version; `data snapshot --name NAME` moves `NAME@latest`."""

    name: str
    tag: str
    data_version_id: str
    created_at: datetime | None = None


@dataclass(frozen=True)
class CheckpointRecord:
    """A checkpoint a run saved at `step`, as the tracking store records it: where it lies
    (`uri`) and the metrics it was saved with. `deleted_at` is set once its files were deleted;
    the record stays, so the run's history still shows it."""

    run_id: str
    step: int
    uri: str
    epoch: int | None
    metrics: dict[str, float]
    created_at: datetime
    deleted_at: datetime | None = None

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None


@dataclass(frozen=True)
class ModelVersion:
    """A registered version of a model: `version` is the number the store gave it ("1", "2",
    ... per model), `label` the version its client named it ("3.1"; None when none), unique
    per model. Its lineage (run, data version, git commit, feature pipeline hash, environment)
    never changes; only its stage does."""

    model_name: str
    version: str
    run_id: str
    stage: ModelStage
    artifact_uri: str
    created_at: datetime
    metrics: dict[str, float] = field(default_factory=dict)
    data_version_id: str | None = None
    git_commit: str | None = None
    features_hash: str | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    label: str | None = None


class StageOutcome(str, enum.Enum):
    """What a stage history entry records: a version `registered`, `promoted` to a stage (its
    gates passed, or were overridden: `forced`), `refused` by its gates (its stage unchanged),
    or `replaced`: moved to archived because a promotion gave its stage to another version."""

    REGISTERED = "registered"
    PROMOTED = "promoted"
    REFUSED = "refused"
    REPLACED = "replaced"


@dataclass(frozen=True)
class StageChange:
    """One entry of a model's stage history (`from_stage` is None for a registration).
    `gate_report` holds the gate results the decision was taken on (each a dict: name, passed,
    figures, message)."""

    change_id: int
    model_name: str
    version: str
    from_stage: ModelStage | None
    to_stage: ModelStage
    outcome: StageOutcome
    forced: bool
    user: str
    reason: str
    gate_report: tuple[dict[str, Any], ...]
    created_at: datetime


@dataclass(frozen=True)
class Webhook:
    """A webhook subscription: events named in `events` are POSTed to `url`, signed with the
    secret held by the environment variable `secret_env` (the secret itself is never stored)."""

    webhook_id: int
    url: str
    events: tuple[str, ...]
    secret_env: str
    created_at: datetime


@dataclass(frozen=True)
class WebhookDelivery:
    """One attempt to deliver an event to a webhook: the HTTP status answered (None when none
    came), the error, and whether it was delivered (a 2xx answer). `event_delivery_id` names
    the outbox delivery it was an attempt of (None in logs older than the outbox)."""

    delivery_id: int
    webhook_id: int
    event_id: str
    event: str
    attempt: int
    status_code: int | None
    error: str | None
    delivered: bool
    created_at: datetime
    event_delivery_id: int | None = None


# The events trainforge announces (`trainforge.events` describes each); the outbox stores them
# by these names and subscriptions select them.
STAGE_CHANGED = "model.stage_changed"
PROMOTION_REFUSED = "model.promotion_refused"
VALIDATION_FAILED = "data.validation_failed"
DRIFT_DETECTED = "data.drift_detected"


@dataclass(frozen=True)
class OutboxEvent:
    """An event as the outbox holds it, written in the transaction of what it announces.

    `outbox_id` orders the outbox (the order events were written); `subject` is what the event
    is about and what deliveries keep in order (`model:NAME`, `run:RUN_ID`). A stage change's
    event holds the history entry it announces (`stage_change`) and no `data`; any other
    event holds its `data`."""

    outbox_id: int
    event_id: str
    name: str
    subject: str
    occurred_at: datetime
    data: dict[str, Any] = field(default_factory=dict)
    stage_change: StageChange | None = None


class DeliveryState(str, enum.Enum):
    """Where the delivery of one event to one subscription stands: `pending` (attempts to
    come), `delivered` (a 2xx answer), `dead` (given up: out of time, or refused by a 4xx
    answer; `redeliver` makes it pending again)."""

    PENDING = "pending"
    DELIVERED = "delivered"
    DEAD = "dead"


@dataclass(frozen=True)
class EventDelivery:
    """The delivery of one outbox event to one webhook: its state, the attempts made (all
    rounds), the attempts of this round (since it was written or last redelivered, from
    `round_started_at`), when the next attempt is due, the lease a deliverer holds on it
    (`leased_until`, None when none) and the last attempt's error."""

    delivery_id: int
    webhook_id: int
    event: OutboxEvent
    state: DeliveryState
    attempts: int
    round_attempts: int
    round_started_at: datetime
    next_attempt_at: datetime
    leased_until: datetime | None
    last_error: str | None
    created_at: datetime


@dataclass(frozen=True)
class Pipeline:
    """A pipeline's wiring (`dag_config`), recorded by its runs under the spec's name, or
    registered (`trainforge pipelines register`) under an id of its own: then `spec` is the
    resolved spec a submitted run of it starts from, `created_by` who registered it and
    `registered_at` when."""

    pipeline_id: str
    name: str
    dag_config: dict[str, Any]
    schedule: str | None = None
    created_by: str | None = None
    spec: dict[str, Any] | None = None
    registered_at: datetime | None = None


class StepState(str, enum.Enum):
    """One attempt of one step of a pipeline run. `retrying`: the attempt failed and another
    follows; `cached`: the outputs of an earlier execution with the same cache key were reused;
    `skipped`: a step it depends on failed, so it never ran."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CACHED = "cached"
    SKIPPED = "skipped"
    RETRYING = "retrying"

    @property
    def has_outputs(self) -> bool:
        return self in (StepState.SUCCEEDED, StepState.CACHED)


class PipelineRunStatus(str, enum.Enum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class PipelineRun:
    """One execution of a pipeline's DAG. `source` says how to build the DAG again (a resume
    rebuilds it with the code as it is then); `options` are the runner's (no-cache, rerun,
    max-parallel); `run_id` is the tracked run its steps record to, if any."""

    pipeline_run_id: str
    pipeline_id: str
    status: PipelineRunStatus
    source: dict[str, Any]
    options: dict[str, Any]
    run_id: str | None
    started_at: datetime
    ended_at: datetime | None = None


@dataclass(frozen=True)
class StepRun:
    """One attempt of one step: its state, timings, error, cache key with the parts it hashes
    (what `explain-cache` compares), its outputs as value-store references, and for a `cached`
    attempt the step run whose outputs it reused."""

    step_run_id: int
    pipeline_run_id: str
    step: str
    attempt: int
    state: StepState
    started_at: datetime | None
    ended_at: datetime | None
    error: str | None
    cache_key: str | None
    cache_parts: dict[str, Any]
    outputs: dict[str, Any]
    cached_from: int | None


class Role(str, enum.Enum):
    """What a user or token may do on `trainforge server`, each role all the one before it
    may: `viewer` reads, `editor` also writes runs and moves model stages, `admin` also
    manages users and tokens."""

    VIEWER = "viewer"
    EDITOR = "editor"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return list(Role).index(self)

    def allows(self, needed: Role) -> bool:
        """Whether this role may do what `needed` may."""
        return self.rank >= needed.rank


@dataclass(frozen=True)
class User:
    """Someone (or a service: CI, a worker) the server knows, with the most a token of theirs
    may do."""

    name: str
    role: Role
    created_at: datetime


@dataclass(frozen=True)
class ApiToken:
    """An API token of `user`: `token_id` is the public part a request's token starts with,
    `secret_hash` the SHA-256 of its secret (the secret itself is shown once, never stored);
    `role` at most the user's; it stops working at `expires_at` (None: never) or once
    revoked."""

    token_id: str
    user: str
    role: Role
    secret_hash: str
    description: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
