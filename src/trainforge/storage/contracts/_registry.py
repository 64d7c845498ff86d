"""The protocols of the model registry, webhooks and the event outbox."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from trainforge.entities import (
    DeliveryState,
    EventDelivery,
    ModelStage,
    ModelVersion,
    OutboxEvent,
    StageChange,
    Webhook,
    WebhookDelivery,
)
from trainforge.storage.contracts._pages import DEFAULT_LIMIT, Page


class RegistryStore(Protocol):
    """Registered model versions, numbered "1", "2", ... per model name, with their stage
    history and aliases.

    - `create_model_version` takes the next number; concurrent registrations of one model get
      distinct numbers (`Conflict` only if no number could be taken after many retries).
      `NotFound` for a missing run. It adds the version's first history entry (`registered`,
      naming `user`: who ran the pipeline that registered it);
    - a version may carry a `label`, the version its client named it ("3.1"; None: none),
      unique per model: registering a label another version of the model has raises
      `Conflict` naming the model and the label, and registers nothing (of concurrent
      registrations of one label, exactly one is stored). The store does not judge a label's
      form (`trainforge.registry` does);
    - `get_model_version` raises `NotFound` naming the model and version;
      `get_model_version_by_label` raises `NotFound` naming the model and label;
    - `list_model_versions` orders by model name, then version number (cursor: that pair); a
      version's fields never change here, only its stage (`change_stage`), and it is never
      deleted;
    - `change_stage` moves a version to a stage as decided when it was in `expected_from` and
      the target stage (production and canary, which hold at most one version of a model)
      was held by `expected_holder` (None: by none). The holder is moved to archived (a
      `replaced` history entry) and the version to the stage (a `promoted` one), in one unit of
      work. When another change came first (the version's stage or the holder differs),
      `Conflict` and nothing changes: of concurrent changes decided on one state, one wins.
      It does not judge whether the move is allowed (`trainforge.registry` does);
    - `record_refusal` adds a `refused` history entry (the stage stays), under the model's lock
      as a change;
    - every `promoted`, `replaced` and `refused` entry is written to the outbox in the unit of
      work that adds it (`OutboxStore`: `model.stage_changed`, or `model.promotion_refused`
      for a refusal; subject `model:NAME`): the entry and its event commit or roll back
      together;
    - `get_stage_holder` is the version of a model in production or canary, or None
      (`ValueError` for another stage): what serving polls to follow stage changes;
    - `list_stage_changes` is a model's history (of one version, when given), oldest first
      (cursor: the entry's id);
    - `set_alias` points an alias at a version (moving it from another); `get_alias` is the
      version an alias names (`NotFound` when none); `list_aliases` maps each alias of a model
      to its version;
    - every method naming a version raises `NotFound` naming the model and version;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def create_model_version(
        self,
        model_name: str,
        run_id: str,
        artifact_uri: str,
        stage: ModelStage,
        metrics: dict[str, float],
        data_version_id: str | None = None,
        git_commit: str | None = None,
        features_hash: str | None = None,
        environment: dict[str, Any] | None = None,
        user: str = "",
        label: str | None = None,
    ) -> ModelVersion: ...

    def get_model_version(self, model_name: str, version: str) -> ModelVersion: ...

    def get_model_version_by_label(self, model_name: str, label: str) -> ModelVersion: ...

    def list_model_versions(
        self, model_name: str | None = None, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[ModelVersion]: ...

    def change_stage(
        self,
        model_name: str,
        version: str,
        to: ModelStage,
        *,
        expected_from: ModelStage,
        expected_holder: str | None,
        user: str,
        reason: str,
        forced: bool = False,
        gate_report: Sequence[dict[str, Any]] = (),
    ) -> StageChange: ...

    def record_refusal(
        self, model_name: str, version: str, to: ModelStage, *, user: str, reason: str,
        gate_report: Sequence[dict[str, Any]],
    ) -> StageChange: ...

    def get_stage_holder(self, model_name: str, stage: ModelStage) -> ModelVersion | None: ...

    def list_stage_changes(
        self, model_name: str, version: str | None = None, limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[StageChange]: ...

    def set_alias(self, model_name: str, alias: str, version: str) -> None: ...

    def get_alias(self, model_name: str, alias: str) -> ModelVersion: ...

    def list_aliases(self, model_name: str) -> dict[str, str]: ...


class WebhookStore(Protocol):
    """Webhook subscriptions and the log of every delivery attempt.

    - `add_webhook` stores a subscription (ids 1, 2, ... in order of creation); the secret is
      not given to the store, only the name of the environment variable holding it;
    - `list_webhooks` orders by id (cursor: the id);
    - `record_delivery` logs one attempt (`NotFound` for an unknown webhook);
      `list_deliveries` lists attempts newest first (of one webhook, when given; cursor: the
      attempt's id);
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def add_webhook(self, url: str, events: Sequence[str], secret_env: str) -> Webhook: ...

    def list_webhooks(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Webhook]: ...

    def record_delivery(
        self, webhook_id: int, event_id: str, event: str, attempt: int,
        status_code: int | None, error: str | None, delivered: bool,
    ) -> WebhookDelivery: ...

    def list_deliveries(
        self, webhook_id: int | None = None, limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[WebhookDelivery]: ...


class OutboxStore(Protocol):
    """The outbox: events written in the unit of work of what they announce, and the delivery
    of each to every webhook subscribed to it when it was written (one `EventDelivery` per
    webhook, `pending` and due at once). Deliverers send them off the writer's path.

    - `add_event` writes an event about `subject` (`run:RUN_ID`, `model:NAME`) on its own;
      `set_tags_and_announce` merges `tags` into a run's tags (as `set_tags`) and writes the
      event in the same unit of work (`NotFound` for an unknown run, and nothing written).
      Stage changes write theirs through `RegistryStore`;
    - a webhook's deliveries of one subject are in order: `delivery_heads` lists the earliest
      `pending` delivery of each (webhook, subject), soonest due first, and `claim_delivery`
      takes only such a head. The claim is a lease: it succeeds (returning the delivery) when
      the delivery is pending, due at `now`, not leased by anyone at `now` and no earlier
      event of its subject is pending for its webhook, else None; of concurrent claims (any
      processes, any machines) one wins;
    - `finish_delivery` logs the attempt (a `WebhookDelivery` linked to the delivery, numbered
      after the earlier ones) and, while `owner` still holds the lease, sets the delivery's
      state, next attempt and last error and ends the lease; a lease taken over meanwhile
      keeps the delivery as its new holder leaves it (the attempt is logged all the same);
    - `redeliver` makes a `delivered` or `dead` delivery `pending` again, due at `now`, with a
      new round of attempts from `now`; `Conflict` naming it when it is pending already;
    - `get_event_delivery`, `finish_delivery` and `redeliver` raise `NotFound` naming the
      delivery id; `list_event_deliveries` lists newest first (of one state and one webhook,
      when given; cursor: the delivery's id);
    - times are the caller's (`now`): every deliverer should run on a synchronised clock;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def add_event(self, name: str, subject: str, data: dict[str, Any], *, event_id: str,
                  occurred_at: datetime) -> OutboxEvent: ...

    def set_tags_and_announce(self, run_id: str, tags: dict[str, Any], name: str,
                              data: dict[str, Any], *, event_id: str,
                              occurred_at: datetime) -> OutboxEvent: ...

    def delivery_heads(self, limit: int = DEFAULT_LIMIT) -> list[EventDelivery]: ...

    def claim_delivery(self, delivery_id: int, owner: str, *, now: datetime,
                       leased_until: datetime) -> EventDelivery | None: ...

    def finish_delivery(
        self, delivery_id: int, owner: str, *, status_code: int | None, error: str | None,
        state: DeliveryState, next_attempt_at: datetime | None,
    ) -> WebhookDelivery: ...

    def redeliver(self, delivery_id: int, now: datetime) -> EventDelivery: ...

    def get_event_delivery(self, delivery_id: int) -> EventDelivery: ...

    def list_event_deliveries(
        self, state: DeliveryState | None = None, webhook_id: int | None = None,
        limit: int = DEFAULT_LIMIT, cursor: str | None = None,
    ) -> Page[EventDelivery]: ...
