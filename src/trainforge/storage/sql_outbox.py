"""The outbox area of the SQL store: `announce` (the statements that write an event and its
deliveries inside the caller's transaction) and `SqlOutbox`, the `OutboxStore` methods that
`SqlStore` mixes in (each its own transaction, through the store's `_read` and `_write`).

Rules beyond `OutboxStore`'s:
- an event is written with one `pending` delivery per webhook whose `events` name it at that
  moment, due at once; a webhook added later does not get earlier events;
- a claim is one conditional UPDATE of the delivery row (pending, due, lease free, no earlier
  pending event of its subject for its webhook). On SQLite the write transaction holds the
  database's write lock; on PostgreSQL an UPDATE that waited for a racing one re-checks its
  WHERE on the row that one committed. Either way, of racing claims exactly one matches;
- a stage change's event is written by `sql_registry` through `announce_stage_change`, in the
  transaction that adds the history entry.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Select, exists, or_, select, update
from sqlalchemy.orm import Session, aliased

from trainforge.entities import (
    PROMOTION_REFUSED,
    STAGE_CHANGED,
    DeliveryState,
    EventDelivery,
    OutboxEvent,
    StageOutcome,
    WebhookDelivery,
)
from trainforge.errors import Conflict, NotFound
from trainforge.storage.contracts import DEFAULT_LIMIT, Page
from trainforge.storage.cursors import Listing, check_limit
from trainforge.storage.records import to_delivery, to_stage_change
from trainforge.storage.sql_base import SqlBase
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.tables import (
    EventDeliveryRow,
    OutboxEventRow,
    RunRow,
    StageChangeRow,
    WebhookDeliveryRow,
    WebhookRow,
    as_utc,
    utcnow,
)

PENDING = DeliveryState.PENDING.value
NEWEST_FIRST = (OrderKey(EventDeliveryRow.id, (int,), descending=True),)


def announce(session: Session, name: str, subject: str, *, data: dict[str, Any] | None,
             event_id: str, occurred_at: datetime,
             stage_change_id: int | None = None) -> OutboxEventRow:
    """Write the event and a pending delivery to each webhook subscribed to `name`."""
    event = OutboxEventRow(event_id=event_id, name=name, subject=subject, data=data,
                           stage_change_id=stage_change_id, occurred_at=occurred_at)
    session.add(event)
    session.flush()
    now = utcnow()
    for hook in session.scalars(select(WebhookRow).order_by(WebhookRow.id)):
        if name in hook.events:
            session.add(EventDeliveryRow(
                outbox_id=event.id, webhook_id=hook.id, subject=subject, state=PENDING,
                attempts=0, round_attempts=0, round_started_at=now, next_attempt_at=now,
                created_at=now))
    session.flush()
    return event


def announce_stage_change(session: Session, change: StageChangeRow) -> None:
    """The event of a history entry (flushed, so that it has its id): `model.promotion_refused`
    for a refusal, else `model.stage_changed`; its subject is the model."""
    name = PROMOTION_REFUSED if change.outcome == StageOutcome.REFUSED.value else STAGE_CHANGED
    announce(session, name, f"model:{change.model_name}", data=None,
             event_id=uuid.uuid4().hex, occurred_at=change.created_at,
             stage_change_id=change.id)


class SqlOutbox(SqlBase):
    """The `OutboxStore` methods of `SqlStore`."""

    def add_event(self, name: str, subject: str, data: dict[str, Any], *,
                  event_id: str, occurred_at: datetime) -> OutboxEvent:
        with self._write() as session:
            row = announce(session, name, subject, data=dict(data), event_id=event_id,
                           occurred_at=occurred_at)
            return _event(session, row)

    def set_tags_and_announce(self, run_id: str, tags: dict[str, Any], name: str,
                              data: dict[str, Any], *, event_id: str,
                              occurred_at: datetime) -> OutboxEvent:
        """Merge `tags` into the run's tags and write the event about the run, together."""
        with self._write() as session:
            run = session.get(RunRow, run_id, with_for_update=True)
            if run is None:
                raise NotFound(f"run {run_id!r} not found")
            run.tags = {**run.tags, **tags}
            row = announce(session, name, f"run:{run_id}", data=dict(data), event_id=event_id,
                           occurred_at=occurred_at)
            return _event(session, row)

    def delivery_heads(self, limit: int = DEFAULT_LIMIT) -> list[EventDelivery]:
        """The earliest pending delivery of each (webhook, subject), soonest due first."""
        check_limit(limit)
        query = (select(EventDeliveryRow)
                 .where(EventDeliveryRow.state == PENDING, ~_earlier_pending())
                 .order_by(EventDeliveryRow.next_attempt_at, EventDeliveryRow.id).limit(limit))
        with self._read() as session:
            return [_delivery(session, row) for row in session.scalars(query)]

    def claim_delivery(self, delivery_id: int, owner: str, *, now: datetime,
                       leased_until: datetime) -> EventDelivery | None:
        claim = (update(EventDeliveryRow)
                 .where(EventDeliveryRow.id == delivery_id, EventDeliveryRow.state == PENDING,
                        EventDeliveryRow.next_attempt_at <= now,
                        or_(EventDeliveryRow.leased_until.is_(None),
                            EventDeliveryRow.leased_until <= now),
                        ~_earlier_pending())
                 .values(leased_until=leased_until, lease_owner=owner)
                 .execution_options(synchronize_session=False))
        with self._write() as session:
            if session.execute(claim).rowcount != 1:  # type: ignore[attr-defined]
                return None
            return _delivery(session, _get(session, delivery_id))

    def finish_delivery(
        self, delivery_id: int, owner: str, *, status_code: int | None,
        error: str | None, state: DeliveryState, next_attempt_at: datetime | None,
    ) -> WebhookDelivery:
        with self._write() as session:
            row = _get(session, delivery_id, lock=True)
            event = session.get(OutboxEventRow, row.outbox_id)
            assert event is not None, "a delivery's event exists (foreign key)"
            row.attempts += 1
            attempt = WebhookDeliveryRow(
                webhook_id=row.webhook_id, event_id=event.event_id, event=event.name,
                attempt=row.attempts, status_code=status_code, error=error,
                delivered=state is DeliveryState.DELIVERED, created_at=utcnow(),
                event_delivery_id=row.id)
            session.add(attempt)
            if row.lease_owner == owner and row.state == PENDING:
                row.round_attempts += 1
                row.state, row.last_error = DeliveryState(state).value, error
                row.next_attempt_at = next_attempt_at or row.next_attempt_at
                row.leased_until, row.lease_owner = None, None
            session.flush()
            return to_delivery(attempt)

    def redeliver(self, delivery_id: int, now: datetime) -> EventDelivery:
        with self._write() as session:
            row = _get(session, delivery_id, lock=True)
            if row.state == PENDING:
                due = as_utc(row.next_attempt_at).isoformat(timespec="seconds")
                raise Conflict(f"delivery {delivery_id} is pending already (attempt "
                               f"{row.attempts + 1} due {due}); only a delivered or dead "
                               "one is redelivered")
            row.state, row.round_attempts = PENDING, 0
            row.round_started_at = row.next_attempt_at = now
            row.leased_until, row.lease_owner = None, None
            session.flush()
            return _delivery(session, row)

    def get_event_delivery(self, delivery_id: int) -> EventDelivery:
        with self._read() as session:
            return _delivery(session, _get(session, delivery_id))

    def list_event_deliveries(
        self, state: DeliveryState | None = None, webhook_id: int | None = None,
        limit: int = DEFAULT_LIMIT, cursor: str | None = None,
    ) -> Page[EventDelivery]:
        """Deliveries newest first (of one state and one webhook, when given)."""
        value = None if state is None else DeliveryState(state).value
        listing = Listing("list_event_deliveries", (value, webhook_id))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing, _deliveries(value, webhook_id),
                                           NEWEST_FIRST, limit, cursor)
            return Page(tuple(_delivery(session, row[0]) for row in rows), next_cursor)


def _earlier_pending() -> Any:
    """An earlier event of the delivery's subject is pending for its webhook."""
    earlier = aliased(EventDeliveryRow)
    return exists().where(earlier.webhook_id == EventDeliveryRow.webhook_id,
                          earlier.subject == EventDeliveryRow.subject,
                          earlier.state == PENDING,
                          earlier.outbox_id < EventDeliveryRow.outbox_id)


def _deliveries(state: str | None, webhook_id: int | None) -> Select[Any]:
    query = select(EventDeliveryRow)
    if state is not None:
        query = query.where(EventDeliveryRow.state == state)
    if webhook_id is not None:
        query = query.where(EventDeliveryRow.webhook_id == webhook_id)
    return query


def _get(session: Session, delivery_id: int, lock: bool = False) -> EventDeliveryRow:
    row = session.get(EventDeliveryRow, delivery_id, with_for_update=lock)
    if row is None:
        raise NotFound(f"delivery {delivery_id} not found (see: trainforge webhooks outbox)")
    return row


def _event(session: Session, row: OutboxEventRow) -> OutboxEvent:
    change = None
    if row.stage_change_id is not None:
        entry = session.get(StageChangeRow, row.stage_change_id)
        assert entry is not None, "an event's history entry exists (foreign key)"
        change = to_stage_change(entry)
    return OutboxEvent(outbox_id=row.id, event_id=row.event_id, name=row.name,
                       subject=row.subject, occurred_at=as_utc(row.occurred_at),
                       data=dict(row.data or {}), stage_change=change)


def _delivery(session: Session, row: EventDeliveryRow) -> EventDelivery:
    event = session.get(OutboxEventRow, row.outbox_id)
    assert event is not None, "a delivery's event exists (foreign key)"
    return EventDelivery(
        delivery_id=row.id, webhook_id=row.webhook_id, event=_event(session, event),
        state=DeliveryState(row.state), attempts=row.attempts,
        round_attempts=row.round_attempts, round_started_at=as_utc(row.round_started_at),
        next_attempt_at=as_utc(row.next_attempt_at),
        leased_until=None if row.leased_until is None else as_utc(row.leased_until),
        last_error=row.last_error, created_at=as_utc(row.created_at))
