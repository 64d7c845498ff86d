"""Registry statements of the SQL store: stage changes under the model's lock, the stage
history, aliases, webhook subscriptions and their delivery log. Each function runs inside the
caller's session (transaction); each promoted, replaced or refused history entry writes its
event to the outbox (`sql_outbox.announce_stage_change`) in that transaction.

A stage change first locks every version row of its model (`SELECT ... FOR UPDATE` on
PostgreSQL; on SQLite the write transaction began with `BEGIN IMMEDIATE`, which holds the
database's write lock already), so changes of one model are serialised. It then checks that
what the caller decided on still holds (the version's stage, and the version holding the
target stage); if another change came first, `Conflict` and nothing is written. The partial
unique index on (model, stage) for production and canary is the backstop.

A registration takes the next number of its model, retrying when a concurrent one took it
first (the primary key refuses the second). A label is checked in the same transaction, with
the unique index on (model, label) as the backstop: of two registrations racing for one label,
the second fails on the index, is retried, and its retry finds the label taken (`Conflict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, Select, cast, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from trainforge.entities import (
    ModelStage,
    ModelVersion,
    StageChange,
    StageOutcome,
    Webhook,
    WebhookDelivery,
)
from trainforge.errors import Conflict, NotFound
from trainforge.storage import sql_outbox
from trainforge.storage.contracts import DEFAULT_LIMIT, Page
from trainforge.storage.cursors import Listing
from trainforge.storage.records import (
    metrics_json,
    to_delivery,
    to_model_version,
    to_stage_change,
    to_webhook,
)
from trainforge.storage.sql_base import SqlBase, get_row
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.tables import (
    ModelAliasRow,
    ModelVersionRow,
    RunRow,
    StageChangeRow,
    WebhookDeliveryRow,
    WebhookRow,
    utcnow,
)

SINGLE_HOLDER = (ModelStage.PRODUCTION, ModelStage.CANARY)
BY_ID = (OrderKey(StageChangeRow.id, (int,)),)
BY_WEBHOOK_ID = (OrderKey(WebhookRow.id, (int,)),)
NEWEST_DELIVERY_FIRST = (OrderKey(WebhookDeliveryRow.id, (int,), descending=True),)


def record_registration(session: Session, row: ModelVersionRow, user: str) -> None:
    """The history entry of a new version: registered into its stage by its run, which
    `user` ran."""
    session.add(_change(row.model_name, row.version, None, row.stage, StageOutcome.REGISTERED,
                        user=user, reason=f"registered by run {row.run_id}"))


def change_stage(
    session: Session, model_name: str, version: str, to: ModelStage, *,
    expected_from: ModelStage, expected_holder: str | None, user: str, reason: str,
    forced: bool, gate_report: Sequence[dict[str, Any]],
) -> StageChange:
    """Move the version to `to` as decided when it was in `expected_from` and `to` was held by
    `expected_holder` (production and canary only; None: nobody). The holder is archived
    first, with its own history entry. `Conflict` when either changed meanwhile."""
    rows = _locked_versions(session, model_name)
    candidate = _version(rows, model_name, version)
    if candidate.stage != expected_from.value:
        raise Conflict(f"model {model_name!r} version {version!r} is in {candidate.stage} now, "
                       f"not {expected_from.value}: another change came first; promote again")
    if to in SINGLE_HOLDER:
        holder = next((row for row in rows.values() if row.stage == to.value), None)
        found = None if holder is None else holder.version
        if found != expected_holder:
            raise Conflict(f"model {model_name!r}: {to.value} is held by "
                           f"{_named(found)} now, not {_named(expected_holder)}: another "
                           "change came first; promote again")
        if holder is not None:
            holder.stage = ModelStage.ARCHIVED.value
            _add(session, _change(model_name, holder.version, to.value,
                                  ModelStage.ARCHIVED.value, StageOutcome.REPLACED, user=user,
                                  reason=f"version {version} promoted to {to.value}"))
            # flushed: the holder left the stage before the candidate takes it
    candidate.stage = to.value
    change = _add(session, _change(model_name, version, expected_from.value, to.value,
                                   StageOutcome.PROMOTED, user=user, reason=reason,
                                   forced=forced, gate_report=gate_report))
    return to_stage_change(change)


def record_refusal(
    session: Session, model_name: str, version: str, to: ModelStage, *, user: str,
    reason: str, gate_report: Sequence[dict[str, Any]],
) -> StageChange:
    """A history entry for a promotion its gates refused; the version keeps its stage. Taken
    under the model's lock, so that its event is written in order with the model's changes."""
    row = _version(_locked_versions(session, model_name), model_name, version)
    change = _add(session, _change(model_name, version, row.stage, to.value,
                                   StageOutcome.REFUSED, user=user, reason=reason,
                                   gate_report=gate_report))
    return to_stage_change(change)


def stage_holder(session: Session, model_name: str, stage: ModelStage) -> ModelVersion | None:
    """The version of the model in `stage` (production or canary; else `ValueError`)."""
    if stage not in SINGLE_HOLDER:
        raise ValueError(f"stage {stage.value!r} may hold many versions: ask for production "
                         "or canary")
    row = session.scalars(select(ModelVersionRow).where(
        ModelVersionRow.model_name == model_name, ModelVersionRow.stage == stage.value)).first()
    return None if row is None else to_model_version(row)


def stage_changes(model_name: str, version: str | None) -> Select[Any]:
    """The model's history rows (of one version, when given), to be ordered `BY_ID`."""
    query = select(StageChangeRow).where(StageChangeRow.model_name == model_name)
    if version is not None:
        query = query.where(StageChangeRow.version == version)
    return query


def labelled(session: Session, model_name: str, label: str) -> ModelVersionRow | None:
    """The version of the model carrying `label`, if any."""
    return session.scalars(select(ModelVersionRow).where(
        ModelVersionRow.model_name == model_name, ModelVersionRow.label == label)).first()


def set_alias(session: Session, model_name: str, alias: str, version: str) -> None:
    """Point `alias` at the version (moving it if it named another)."""
    if session.get(ModelVersionRow, (model_name, version)) is None:
        raise NotFound(f"model {model_name!r} version {version!r} not found")
    row = session.get(ModelAliasRow, (model_name, alias), with_for_update=True)
    if row is None:
        session.add(ModelAliasRow(model_name=model_name, alias=alias, version=version,
                                  updated_at=utcnow()))
    else:
        row.version, row.updated_at = version, utcnow()


def aliased(session: Session, model_name: str, alias: str) -> ModelVersion:
    row = session.get(ModelAliasRow, (model_name, alias))
    if row is None:
        raise NotFound(f"model {model_name!r} has no alias {alias!r}")
    version = session.get(ModelVersionRow, (model_name, row.version))
    assert version is not None, "an alias names a stored version (foreign key)"
    return to_model_version(version)


def aliases(session: Session, model_name: str) -> dict[str, str]:
    rows = session.scalars(select(ModelAliasRow).where(ModelAliasRow.model_name == model_name)
                           .order_by(ModelAliasRow.alias))
    return {row.alias: row.version for row in rows}


def add_webhook(session: Session, url: str, events: Sequence[str], secret_env: str) -> Webhook:
    row = WebhookRow(url=url, events=list(events), secret_env=secret_env, created_at=utcnow())
    session.add(row)
    session.flush()
    return to_webhook(row)


def webhooks() -> Select[Any]:
    """Every subscription, to be ordered `BY_WEBHOOK_ID`."""
    return select(WebhookRow)


def record_delivery(
    session: Session, webhook_id: int, event_id: str, event: str, attempt: int,
    status_code: int | None, error: str | None, delivered: bool,
) -> WebhookDelivery:
    if session.get(WebhookRow, webhook_id) is None:
        raise NotFound(f"webhook {webhook_id} not found")
    row = WebhookDeliveryRow(webhook_id=webhook_id, event_id=event_id, event=event,
                             attempt=attempt, status_code=status_code, error=error,
                             delivered=delivered, created_at=utcnow())
    session.add(row)
    session.flush()
    return to_delivery(row)


def deliveries(webhook_id: int | None) -> Select[Any]:
    """Delivery attempts (of one webhook, when given), to be ordered `NEWEST_DELIVERY_FIRST`."""
    query = select(WebhookDeliveryRow)
    if webhook_id is not None:
        query = query.where(WebhookDeliveryRow.webhook_id == webhook_id)
    return query


def _locked_versions(session: Session, model_name: str) -> dict[str, ModelVersionRow]:
    query = (select(ModelVersionRow).where(ModelVersionRow.model_name == model_name)
             .order_by(ModelVersionRow.version).with_for_update())
    return {row.version: row for row in session.scalars(query)}


def _version(rows: dict[str, ModelVersionRow], model_name: str, version: str) -> ModelVersionRow:
    if version not in rows:
        raise NotFound(f"model {model_name!r} version {version!r} not found")
    return rows[version]


def _add(session: Session, change: StageChangeRow) -> StageChangeRow:
    """Add a promoted, replaced or refused history entry and write its event to the outbox."""
    session.add(change)
    session.flush()
    sql_outbox.announce_stage_change(session, change)
    return change


def _named(version: str | None) -> str:
    return "no version" if version is None else f"version {version}"


def _change(
    model_name: str, version: str, from_stage: str | None, to_stage: str,
    outcome: StageOutcome, *, user: str, reason: str, forced: bool = False,
    gate_report: Sequence[dict[str, Any]] = (),
) -> StageChangeRow:
    return StageChangeRow(model_name=model_name, version=version, from_stage=from_stage,
                          to_stage=to_stage, outcome=outcome.value, forced=forced, user=user,
                          reason=reason, gate_report=[dict(g) for g in gate_report],
                          created_at=utcnow())

# Each retry means another process took the number we picked; this bounds a pathological storm.
_VERSION_ATTEMPTS = 50
_BY_MODEL_AND_NUMBER = (OrderKey(ModelVersionRow.model_name, (str,)),
                        OrderKey(cast(ModelVersionRow.version, Integer), (int,)))


class SqlRegistryStore(SqlBase):
    """The `RegistryStore` methods of `SqlStore`: model versions, stages, aliases, webhooks."""

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
    ) -> ModelVersion:
        """Register the next version ("1", "2", ...) of `model_name`, made by run `run_id`,
        with its first history entry (naming `user`); `Conflict` when another version of the
        model has `label`."""
        for _ in range(_VERSION_ATTEMPTS):
            row = ModelVersionRow(
                model_name=model_name, run_id=run_id, stage=ModelStage(stage).value,
                artifact_uri=artifact_uri, metrics=metrics_json(metrics),
                data_version_id=data_version_id, git_commit=git_commit,
                features_hash=features_hash, environment=dict(environment or {}),
                created_at=utcnow(), label=label,
            )
            try:
                with self._write() as session:
                    get_row(session, RunRow, run_id, "run")
                    if label is not None:
                        _check_label_free(session, model_name, label)
                    row.version = str(_last_version(session, model_name) + 1)
                    session.add(row)
                    session.flush()
                    record_registration(session, row, user)
            except IntegrityError:
                continue  # another registration took this number (or this label) first
            return to_model_version(row)
        raise Conflict(f"model {model_name!r}: no free version after {_VERSION_ATTEMPTS} tries")

    def get_model_version(self, model_name: str, version: str) -> ModelVersion:
        with self._read() as session:
            row = session.get(ModelVersionRow, (model_name, str(version)))
            if row is None:
                raise NotFound(f"model {model_name!r} version {str(version)!r} not found")
            return to_model_version(row)

    def get_model_version_by_label(self, model_name: str, label: str) -> ModelVersion:
        with self._read() as session:
            row = labelled(session, model_name, label)
            if row is None:
                raise NotFound(f"model {model_name!r} has no version labelled {label!r}")
            return to_model_version(row)

    def list_model_versions(
        self, model_name: str | None = None, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[ModelVersion]:
        """Versions of one model (or of all), by model name then version number."""
        query = select(ModelVersionRow)
        if model_name is not None:
            query = query.where(ModelVersionRow.model_name == model_name)
        listing = Listing("list_model_versions", (model_name,))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing, query, _BY_MODEL_AND_NUMBER, limit,
                                           cursor)
            return Page(tuple(to_model_version(row[0]) for row in rows), next_cursor)

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
    ) -> StageChange:
        """Move the version to `to` under its model's lock, archiving the stage's holder
        (see `sql_registry`); `Conflict` when another change came first."""
        try:
            with self._write() as session:
                return change_stage(
                    session, model_name, str(version), ModelStage(to),
                    expected_from=ModelStage(expected_from), expected_holder=expected_holder,
                    user=user, reason=reason, forced=forced, gate_report=gate_report)
        except IntegrityError as exc:
            raise Conflict(f"model {model_name!r}: {ModelStage(to).value} was taken by another "
                           "change meanwhile; promote again") from exc

    def record_refusal(
        self, model_name: str, version: str, to: ModelStage, *, user: str, reason: str,
        gate_report: Sequence[dict[str, Any]],
    ) -> StageChange:
        with self._write() as session:
            return record_refusal(session, model_name, str(version),
                                               ModelStage(to), user=user, reason=reason,
                                               gate_report=gate_report)

    def get_stage_holder(self, model_name: str, stage: ModelStage) -> ModelVersion | None:
        with self._read() as session:
            return stage_holder(session, model_name, ModelStage(stage))

    def list_stage_changes(
        self, model_name: str, version: str | None = None, limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[StageChange]:
        """The model's stage history (of one version, when given), oldest first."""
        listing = Listing("list_stage_changes", (model_name, version))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing,
                                           stage_changes(model_name, version),
                                           BY_ID, limit, cursor)
            return Page(tuple(to_stage_change(row[0]) for row in rows), next_cursor)

    def set_alias(self, model_name: str, alias: str, version: str) -> None:
        with self._write() as session:
            set_alias(session, model_name, alias, str(version))

    def get_alias(self, model_name: str, alias: str) -> ModelVersion:
        with self._read() as session:
            return aliased(session, model_name, alias)

    def list_aliases(self, model_name: str) -> dict[str, str]:
        with self._read() as session:
            return aliases(session, model_name)

    # webhooks

    def add_webhook(self, url: str, events: Sequence[str], secret_env: str) -> Webhook:
        with self._write() as session:
            return add_webhook(session, url, events, secret_env)

    def list_webhooks(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Webhook]:
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_webhooks"),
                                           webhooks(), BY_WEBHOOK_ID,
                                           limit, cursor)
            return Page(tuple(to_webhook(row[0]) for row in rows), next_cursor)

    def record_delivery(
        self, webhook_id: int, event_id: str, event: str, attempt: int,
        status_code: int | None, error: str | None, delivered: bool,
    ) -> WebhookDelivery:
        with self._write() as session:
            return record_delivery(session, webhook_id, event_id, event, attempt,
                                                status_code, error, delivered)

    def list_deliveries(
        self, webhook_id: int | None = None, limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[WebhookDelivery]:
        """Delivery attempts newest first (of one webhook, when given)."""
        listing = Listing("list_deliveries", (webhook_id,))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing, deliveries(webhook_id),
                                           NEWEST_DELIVERY_FIRST, limit, cursor)
            return Page(tuple(to_delivery(row[0]) for row in rows), next_cursor)


def _check_label_free(session: Session, model_name: str, label: str) -> None:
    holder = labelled(session, model_name, label)
    if holder is not None:
        raise Conflict(f"model {model_name!r} already has a version labelled {label!r} "
                       f"(version {holder.version})")


def _last_version(session: Session, model_name: str) -> int:
    query = select(func.max(cast(ModelVersionRow.version, Integer))).where(
        ModelVersionRow.model_name == model_name
    )
    return session.scalar(query) or 0
