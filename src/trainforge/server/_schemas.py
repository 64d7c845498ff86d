"""What the API answers and takes: models of their own, built field by field from the store's
records, never the records themselves, so a field added to a record (a `system` entry, a
secret) reaches no client until a schema names it."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from trainforge.entities import (
    DataTag,
    DataVersion,
    DeliveryState,
    EventDelivery,
    Experiment,
    MetricPoint,
    ModelStage,
    ModelVersion,
    Pipeline,
    PipelineRun,
    PipelineRunStatus,
    Run,
    StageChange,
    StepRun,
    StepState,
    Webhook,
)
from trainforge.registry import check_label
from trainforge.versioning import names_of


def json_safe(value: Any) -> Any:
    """`value` as JSON holds it: every NaN and infinity (which JSON has not), in it or in the
    dicts, lists and tuples it holds, made null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True)


class ErrorAnswer(_Answer):
    """Every refusal: what was wrong (a message, or the schema's list of field errors)."""

    detail: str | list[dict[str, Any]]


class Refusal(ErrorAnswer):
    """A refused request; a promotion refused by its gates also gives each gate's result."""

    gate_report: list[dict[str, Any]] | None = None


class Health(_Answer):
    status: str


class WhoAmI(_Answer):
    user: str
    role: str
    token_id: str


class ExperimentOut(_Answer):
    experiment_id: str
    name: str
    description: str

    @classmethod
    def of(cls, experiment: Experiment) -> ExperimentOut:
        return cls(experiment_id=experiment.experiment_id, name=experiment.name,
                   description=experiment.description)


class RunOut(_Answer):
    run_id: str
    experiment_id: str
    status: str
    params: dict[str, Any]
    metrics: dict[str, float | None] = Field(description="the latest value of each metric "
                                                         "(NaN and infinity as null)")
    tags: dict[str, Any]
    started_at: datetime
    ended_at: datetime | None
    duration_s: float | None
    git_commit: str | None
    data_version_id: str | None
    parent_run_id: str | None
    error: str | None

    @classmethod
    def of(cls, run: Run) -> RunOut:
        return cls(run_id=run.run_id, experiment_id=run.experiment_id, status=run.status.value,
                   params=run.params, metrics=json_safe(run.metrics),
                   tags=run.tags, started_at=run.started_at, ended_at=run.ended_at,
                   duration_s=run.duration_s, git_commit=run.git_commit,
                   data_version_id=run.data_version_id, parent_run_id=run.parent_run_id,
                   error=run.error)


class ModelVersionOut(_Answer):
    name: str
    version: str = Field(description="the number the store gave it")
    label: str | None = Field(description="the version its registration named (`3.1`)")
    stage: str
    run_id: str
    created_at: datetime
    metrics: dict[str, float | None]
    data_version_id: str | None
    git_commit: str | None

    @classmethod
    def of(cls, version: ModelVersion) -> ModelVersionOut:
        return cls(name=version.model_name, version=version.version, label=version.label,
                   stage=version.stage.value,
                   run_id=version.run_id, created_at=version.created_at,
                   metrics=json_safe(version.metrics),
                   data_version_id=version.data_version_id, git_commit=version.git_commit)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExperimentRequest(_Request):
    """The body of `POST /api/v1/experiments`: the experiment of that name, made if new."""

    name: str = Field(min_length=1, max_length=255)
    description: str = Field("", max_length=2000)


class RunRequest(_Request):
    """The body of `POST /api/v1/experiments/{experiment_id}/runs`: a new running run."""

    params: dict[str, Any] = Field(default_factory=dict)
    tags: dict[str, Any] = Field(default_factory=dict)
    git_commit: str | None = Field(None, max_length=64)
    parent_run_id: str | None = Field(None, max_length=64)


class ValuesRequest(_Request):
    """Params or tags merged into a run's (a key given again is overwritten)."""

    values: dict[str, Any]


class PointIn(_Request):
    key: str = Field(min_length=1, max_length=255)
    value: float | None = Field(description="null for NaN (JSON has none)")
    step: int = Field(ge=0)
    timestamp: float = Field(description="seconds since the epoch")


class MetricBatch(_Request):
    """Points of a run's series, stored once per `batch_id`: a batch sent again (a client
    retrying after a lost answer) is skipped whole."""

    batch_id: str = Field(min_length=1, max_length=64)
    points: list[PointIn] = Field(min_length=1, max_length=10_000)


class EndRequest(_Request):
    status: Literal["completed", "failed", "crashed", "preempted", "pruned"]
    error: str | None = Field(None, max_length=10_000)


class RegisterRequest(_Request):
    """The body of `POST /api/v1/models/register` (the seed's): a model trained anywhere,
    its artifacts at `artifact_uri`, registered under the label `version`."""

    name: str = Field(min_length=1, max_length=255)
    version: str = Field(description="its label: letters, digits and . _ + -, not digits "
                                     "only, not a stage's name")
    artifact_uri: str = Field(min_length=1, max_length=2048)
    metrics: dict[str, float] = Field(default_factory=dict, max_length=1000)
    stage: Literal["staging", "none"] = "staging"

    @field_validator("version")
    @classmethod
    def _a_label(cls, value: str) -> str:
        return check_label(value)


class StageRequest(BaseModel):
    """The body of `PUT /api/v1/models/{name}/versions/{version}/stage`."""

    model_config = ConfigDict(extra="forbid")

    stage: ModelStage
    reason: str = Field("", max_length=2000)
    force: bool = Field(False, description="promote past failed gates (needs a reason)")


class StageChangeOut(_Answer):
    name: str
    version: str
    from_stage: str | None
    to_stage: str
    outcome: str
    forced: bool
    user: str
    reason: str
    gate_report: list[dict[str, Any]]
    created_at: datetime
    replaced: str | None = Field(None, description="the version moved out of the stage")

    @classmethod
    def of(cls, change: StageChange, replaced: str | None = None) -> StageChangeOut:
        return cls(name=change.model_name, version=change.version,
                   from_stage=change.from_stage.value if change.from_stage else None,
                   to_stage=change.to_stage.value, outcome=change.outcome.value,
                   forced=change.forced, user=change.user, reason=change.reason,
                   gate_report=list(change.gate_report), created_at=change.created_at,
                   replaced=replaced)


class ArtifactList(_Answer):
    names: list[str]


class ArtifactOut(_Answer):
    name: str
    size: int = Field(description="bytes stored")


class BatchOut(_Answer):
    stored: bool = Field(description="false when the batch had been stored before")


class PointOut(_Answer):
    key: str
    value: float | None
    step: int
    timestamp: float

    @classmethod
    def of(cls, point: MetricPoint) -> PointOut:
        return cls(key=point.key, value=json_safe(point.value),
                   step=point.step, timestamp=point.timestamp)


class DataVersionOut(_Answer):
    data_version_id: str
    source: str
    num_rows: int
    created_at: datetime | None
    names: list[str] = Field(description="NAME@NUMBER for each name it is numbered under, "
                                         "else its other tags")
    files: list[dict[str, Any]] | None = Field(
        None, description="each file's name, sha256 and rows (one version's answer only)")

    @classmethod
    def of(cls, version: DataVersion, tags: list[DataTag],
           files: bool = False) -> DataVersionOut:
        return cls(data_version_id=version.data_version_id, source=version.source,
                   num_rows=version.num_rows, created_at=version.created_at,
                   names=names_of(tags),
                   files=[dict(f) for f in version.files] if files else None)


class StepRunOut(_Answer):
    """One attempt of one step; `cached_from` names the attempt whose outputs a `cached` one
    reused (its cache parts and outputs stay on the server: `explain-cache` reads them)."""

    step_run_id: int
    step: str
    attempt: int
    state: StepState
    started_at: datetime | None
    ended_at: datetime | None
    error: str | None
    cache_key: str | None
    cached_from: int | None

    @classmethod
    def of(cls, step: StepRun) -> StepRunOut:
        return cls(step_run_id=step.step_run_id, step=step.step, attempt=step.attempt,
                   state=step.state, started_at=step.started_at, ended_at=step.ended_at,
                   error=step.error, cache_key=step.cache_key, cached_from=step.cached_from)


class PipelineOut(_Answer):
    """A pipeline: registered (`trainforge pipelines register`: who, when, the keys a
    submission's `config` may set) or only recorded by its runs (then `registered_at` is null
    and `settable` empty); `dag_config` its steps' wiring; `spec` (one pipeline's answer
    only) the resolved spec submissions start from, credentials left out."""

    pipeline_id: str
    name: str
    registered_at: datetime | None
    created_by: str | None
    schedule: str | None
    settable: list[str]
    dag_config: dict[str, Any]
    spec: dict[str, Any] | None = None

    @classmethod
    def of(cls, pipeline: Pipeline, settable: list[str], with_spec: bool) -> PipelineOut:
        return cls(pipeline_id=pipeline.pipeline_id, name=pipeline.name,
                   registered_at=pipeline.registered_at, created_by=pipeline.created_by,
                   schedule=pipeline.schedule, settable=settable,
                   dag_config=pipeline.dag_config, spec=pipeline.spec if with_spec else None)


class PipelineRunOut(_Answer):
    """One execution of a pipeline's DAG; `run_id` is the tracked run its steps record to;
    `steps` (one pipeline run's answer only) its steps' attempts in the order they began."""

    pipeline_run_id: str
    pipeline_id: str
    status: PipelineRunStatus
    run_id: str | None
    started_at: datetime
    ended_at: datetime | None
    steps: list[StepRunOut] | None = None

    @classmethod
    def of(cls, run: PipelineRun, steps: list[StepRun] | None = None) -> PipelineRunOut:
        return cls(pipeline_run_id=run.pipeline_run_id, pipeline_id=run.pipeline_id,
                   status=run.status, run_id=run.run_id, started_at=run.started_at,
                   ended_at=run.ended_at,
                   steps=None if steps is None else [StepRunOut.of(s) for s in steps])


class ProfileOut(_Answer):
    """A data version's stored profile, as `data profile --json` prints it: its rows and each
    column's kind, type, count, nulls, distinct values and, by kind, min, max, mean, std,
    quantiles, the quantiles' rank error and a histogram, or the top values."""

    data_version_id: str
    rows: int
    columns: dict[str, dict[str, Any]]


class DriftOut(_Answer):
    """`data drift --json` between two stored profiles: per column its statistics, thresholds
    and whether it drifted; the columns added, removed or retyped (`schema_changes`)."""

    reference: str
    current: str
    drifted: bool
    reference_rows: int
    current_rows: int
    schema_changes: dict[str, list[Any]]
    columns: list[dict[str, Any]]


class StudyOut(_Answer):
    name: str
    direction: str
    trials: int
    best_value: float | None
    started: datetime | None


class StudyList(_Answer):
    items: list[StudyOut]


class TrialOut(_Answer):
    number: int
    state: str
    value: float | None
    params: dict[str, Any]
    run_id: str | None
    duration_s: float | None
    error: str | None


class StudyDetail(_Answer):
    """A study as `trainforge tune show` shows it: its trials, the best, the count per state
    and the parameter importances."""

    name: str
    metric: str
    direction: str
    study_run_id: str
    states: dict[str, int]
    best: TrialOut | None
    importances: dict[str, float]
    trials: list[TrialOut]


class IntervalOut(_Answer):
    """The objective of each member (by index) at the end of one interval (null: diverged)
    and the hyperparameters it trained that interval with."""

    interval: int
    step: int
    scores: dict[str, float | None]
    values: dict[str, dict[str, Any]]


class ExploitOut(_Answer):
    """One planned exploit: `recipient` took `donor`'s checkpoint of `donor_checkpoint_step`
    (its model tensors' hash `weights_sha256`) when `exploited`, else `reason` says why not;
    `before` and `after` are the recipient's hyperparameters."""

    interval: int
    step: int
    recipient: int
    donor: int
    exploited: bool
    reason: str | None
    donor_checkpoint_step: int | None
    weights_sha256: str | None
    before: dict[str, Any]
    after: dict[str, Any]


class LineageOut(_Answer):
    """A population-based training study's lineage, as `pbt show --json` prints it (where
    the checkpoints lie left out)."""

    study_run_id: str
    metric: str
    direction: str
    population: int
    intervals: list[IntervalOut]
    exploits: list[ExploitOut]

    @classmethod
    def of(cls, study_run_id: str, lineage: dict[str, Any]) -> LineageOut:
        """From the lineage's strict JSON (`Lineage.to_json`)."""
        return cls(study_run_id=study_run_id, metric=lineage["metric"],
                   direction=lineage["direction"], population=lineage["population"],
                   intervals=[IntervalOut(**i) for i in lineage["intervals"]],
                   exploits=[ExploitOut(**{k: v for k, v in e.items()
                                           if k in ExploitOut.model_fields})
                             for e in lineage["exploits"]])


class WebhookRequest(_Request):
    """A subscription: `events` POSTed to `url`, signed with the secret the environment
    variable `secret_env` holds where the deliverer runs (the secret itself never travels)."""

    url: str = Field(min_length=1, max_length=2048, description="http(s)://host[:port]/path")
    events: list[str] = Field(min_length=1, max_length=16, description=(
        "model.stage_changed, model.promotion_refused, data.validation_failed, "
        "data.drift_detected"))
    secret_env: str = Field(min_length=1, max_length=255)


class WebhookOut(_Answer):
    webhook_id: int
    url: str
    events: list[str]
    secret_env: str
    created_at: datetime

    @classmethod
    def of(cls, hook: Webhook) -> WebhookOut:
        return cls(webhook_id=hook.webhook_id, url=hook.url, events=list(hook.events),
                   secret_env=hook.secret_env, created_at=hook.created_at)


class DeliveryOut(_Answer):
    """An event's delivery to one webhook, as `webhooks outbox` shows it; `next_attempt_at`
    only while it is pending."""

    delivery_id: int
    webhook_id: int
    event: str
    event_id: str
    subject: str
    state: DeliveryState
    attempts: int
    next_attempt_at: datetime | None
    last_error: str | None
    created_at: datetime

    @classmethod
    def of(cls, delivery: EventDelivery) -> DeliveryOut:
        pending = delivery.state is DeliveryState.PENDING
        return cls(delivery_id=delivery.delivery_id, webhook_id=delivery.webhook_id,
                   event=delivery.event.name, event_id=delivery.event.event_id,
                   subject=delivery.event.subject, state=delivery.state,
                   attempts=delivery.attempts,
                   next_attempt_at=delivery.next_attempt_at if pending else None,
                   last_error=delivery.last_error, created_at=delivery.created_at)


class Listing(_Answer):
    """One page of a listing; `next_cursor` fetches the next (null on the last)."""

    next_cursor: str | None


class ExperimentPage(Listing):
    items: list[ExperimentOut]


class RunPage(Listing):
    items: list[RunOut]


class ModelVersionPage(Listing):
    items: list[ModelVersionOut]


class DataVersionPage(Listing):
    items: list[DataVersionOut]


class PipelinePage(Listing):
    items: list[PipelineOut]


class PipelineRunPage(Listing):
    items: list[PipelineRunOut]


class PointPage(Listing):
    items: list[PointOut]


class KeyPage(Listing):
    items: list[str]


class WebhookPage(Listing):
    items: list[WebhookOut]


class DeliveryPage(Listing):
    items: list[DeliveryOut]
