"""`EventPublisher`: where a session's events about a run go (a data alert). `OutboxPublisher`,
the one trainforge uses, writes each to the store's outbox in the unit of work of what it
records, for a `Deliverer` to send; a server may hand its sessions one that also tells its
live listeners. (Stage changes are written to the outbox by the registry's store, in the
transaction of the change.)"""

from __future__ import annotations

from typing import Any, Protocol

from trainforge.events._event import Event
from trainforge.storage.contracts import OutboxStore


class EventPublisher(Protocol):
    def record_and_announce(self, run_id: str, tags: dict[str, Any], event: Event) -> None:
        """Record `tags` on run `run_id` and publish `event` about it, together or not at
        all."""


class OutboxPublisher:
    """Events written to `store`'s outbox (`OutboxStore`)."""

    def __init__(self, store: OutboxStore) -> None:
        self.store = store

    def record_and_announce(self, run_id: str, tags: dict[str, Any], event: Event) -> None:
        self.store.set_tags_and_announce(run_id, tags, event.name, event.data,
                                         event_id=event.event_id,
                                         occurred_at=event.occurred_at)
