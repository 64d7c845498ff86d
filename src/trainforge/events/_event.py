"""Events: what trainforge announces to the outside (webhooks), as JSON-safe records.

    model.stage_changed       a model version moved stage (promoted, or replaced by one)
    model.promotion_refused   a promotion's gates refused it (the version kept its stage)
    data.validation_failed    a run's data broke its schema contract (whatever `on_fail` did)
    data.drift_detected       a run's data drifted from its reference beyond the thresholds

Model events are about their model (kept in order per model); data events about their run
(kept in order per run).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from trainforge.entities import (
    DRIFT_DETECTED,
    PROMOTION_REFUSED,
    STAGE_CHANGED,
    VALIDATION_FAILED,
    OutboxEvent,
    StageChange,
    StageOutcome,
)

KNOWN_EVENTS = (STAGE_CHANGED, PROMOTION_REFUSED, VALIDATION_FAILED, DRIFT_DETECTED)


@dataclass(frozen=True)
class Event:
    """One occurrence: its name (one of `KNOWN_EVENTS`), a unique id (a receiver drops
    repeats of it: a retried delivery carries the same id), when it happened and its data."""

    name: str
    data: dict[str, Any]
    event_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    occurred_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def body(self) -> dict[str, Any]:
        """The JSON document a webhook receives."""
        return {"event": self.name, "event_id": self.event_id,
                "occurred_at": self.occurred_at.isoformat(), "data": self.data}


def stage_event(change: StageChange) -> Event:
    """The event of a stage history entry: `model.promotion_refused` for a refusal, else
    `model.stage_changed`."""
    name = PROMOTION_REFUSED if change.outcome is StageOutcome.REFUSED else STAGE_CHANGED
    return Event(name, {
        "model": change.model_name, "version": change.version,
        "from": None if change.from_stage is None else change.from_stage.value,
        "to": change.to_stage.value, "outcome": change.outcome.value, "forced": change.forced,
        "user": change.user, "reason": change.reason, "gates": list(change.gate_report),
    }, occurred_at=change.created_at)


def data_event(name: str, *, run_id: str, experiment_id: str, source: str,
               data_version_id: str | None, summary: str, report: dict[str, Any]) -> Event:
    """A data alert (`data.validation_failed` or `data.drift_detected`) about a run's data:
    which run and data, a one-line summary and the full report."""
    return Event(name, {"run_id": run_id, "experiment_id": experiment_id, "source": source,
                        "data_version_id": data_version_id, "summary": summary,
                        "report": report})


def outbox_event(stored: OutboxEvent) -> Event:
    """The event the outbox holds, as sent: a stage change's built from its history entry,
    any other with its stored data; the id and time are the stored ones."""
    data = stored.data if stored.stage_change is None else stage_event(stored.stage_change).data
    return Event(stored.name, data, event_id=stored.event_id, occurred_at=stored.occurred_at)
