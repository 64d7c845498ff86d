"""Data alerts of a pipeline run: each one a warning in the log, and an event published
through the session's publisher with the run's record of it (by default written to the
outbox: `trainforge webhooks add URL --events data.validation_failed`; a deliverer sends it).

Rules:
- An alert records the step's tags on the run (`validation`, `drift`) and publishes its event
  in one unit of work (`EventPublisher.record_and_announce`): the record and its event are
  stored together or not at all. Nothing is sent from the run's process.
- An alert never changes how the run goes: a publisher that cannot take the event leaves the
  tags to the run (spilled and replayed as any other record while the database is away) and
  the alert is logged as not written.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from trainforge.errors import TrainforgeError
from trainforge.events import Event, EventPublisher
from trainforge.tracking import RunRecorder

log = logging.getLogger("trainforge")


class Alert(Protocol):
    """Record `tags` on `run` and announce `event` about it, together."""

    def __call__(self, run: RunRecorder, tags: dict[str, Any], event: Event) -> None: ...


class DataAlerts:
    """Announce data events: a log warning, then the tags and the event published together
    (the tags alone without a publisher)."""

    def __init__(self, events: EventPublisher | None) -> None:
        self._events = events

    def __call__(self, run: RunRecorder, tags: dict[str, Any], event: Event) -> None:
        log.warning("alert %s: %s", event.name, event.data.get("summary", ""))
        if self._events is None:
            run.set_tags(tags)
            return
        try:
            self._events.record_and_announce(run.run_id, tags, event)
        except TrainforgeError as exc:
            log.warning("alert %s was not written to the outbox: %s", event.name, exc)
            run.set_tags(tags)
