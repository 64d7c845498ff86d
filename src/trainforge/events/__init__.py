"""Events trainforge announces, the outbox they are written to, and their delivery to webhooks
(signed, retried with backoff for hours, in order per model and per run, every attempt logged).

    >>> subscribe(store, "https://ops.example/hook", [STAGE_CHANGED], "S")  # doctest: +SKIP
    >>> Deliverer(store, os.environ).run_once()                           # doctest: +SKIP

Whatever announces an event (a promotion, a refusal, a data alert) writes it to the store's
outbox in the transaction of what it announces (`OutboxStore`); a `Deliverer` sends it later,
outside that command: `trainforge webhooks deliver`, or the loop `trainforge serve` runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.events._backoff import (
        BackoffPolicy,
        Verdict,
        due,
        next_attempt,
        retry_delay,
        verdict,
    )
    from trainforge.events._deliverer import Deliverer, DelivererStore, Pass
    from trainforge.events._event import (
        DRIFT_DETECTED,
        KNOWN_EVENTS,
        PROMOTION_REFUSED,
        STAGE_CHANGED,
        VALIDATION_FAILED,
        Event,
        data_event,
        outbox_event,
        stage_event,
    )
    from trainforge.events._publisher import EventPublisher, OutboxPublisher
    from trainforge.events._webhooks import SIGNATURE_HEADER, request, sign, subscribe

_EXPORTS = {
    "BackoffPolicy": "trainforge.events._backoff",
    "DRIFT_DETECTED": "trainforge.events._event",
    "Deliverer": "trainforge.events._deliverer",
    "DelivererStore": "trainforge.events._deliverer",
    "Event": "trainforge.events._event",
    "EventPublisher": "trainforge.events._publisher",
    "KNOWN_EVENTS": "trainforge.events._event",
    "OutboxPublisher": "trainforge.events._publisher",
    "PROMOTION_REFUSED": "trainforge.events._event",
    "Pass": "trainforge.events._deliverer",
    "SIGNATURE_HEADER": "trainforge.events._webhooks",
    "STAGE_CHANGED": "trainforge.events._event",
    "VALIDATION_FAILED": "trainforge.events._event",
    "Verdict": "trainforge.events._backoff",
    "data_event": "trainforge.events._event",
    "due": "trainforge.events._backoff",
    "next_attempt": "trainforge.events._backoff",
    "outbox_event": "trainforge.events._event",
    "request": "trainforge.events._webhooks",
    "retry_delay": "trainforge.events._backoff",
    "sign": "trainforge.events._webhooks",
    "stage_event": "trainforge.events._event",
    "subscribe": "trainforge.events._webhooks",
    "verdict": "trainforge.events._backoff",
}

__all__ = [
    "BackoffPolicy",
    "DRIFT_DETECTED",
    "Deliverer",
    "DelivererStore",
    "Event",
    "EventPublisher",
    "KNOWN_EVENTS",
    "OutboxPublisher",
    "PROMOTION_REFUSED",
    "Pass",
    "SIGNATURE_HEADER",
    "STAGE_CHANGED",
    "VALIDATION_FAILED",
    "Verdict",
    "data_event",
    "due",
    "next_attempt",
    "outbox_event",
    "request",
    "retry_delay",
    "sign",
    "stage_event",
    "subscribe",
    "verdict",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
