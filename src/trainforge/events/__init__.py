"""Events trainforge announces, and their delivery to webhooks (signed, retried, logged).

    >>> notifier = WebhookNotifier(store, os.environ)                 # doctest: +SKIP
    >>> notifier.publish(stage_event(change))                         # doctest: +SKIP

The model registry publishes stage changes; a serving deployment subscribes to follow them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.events._event import (
        DRIFT_DETECTED,
        KNOWN_EVENTS,
        PROMOTION_REFUSED,
        STAGE_CHANGED,
        VALIDATION_FAILED,
        Event,
        data_event,
        stage_event,
    )
    from trainforge.events._webhooks import (
        SIGNATURE_HEADER,
        RetryPolicy,
        WebhookNotifier,
        sign,
        subscribe,
    )

_EXPORTS = {
    "DRIFT_DETECTED": "trainforge.events._event",
    "Event": "trainforge.events._event",
    "VALIDATION_FAILED": "trainforge.events._event",
    "data_event": "trainforge.events._event",
    "KNOWN_EVENTS": "trainforge.events._event",
    "PROMOTION_REFUSED": "trainforge.events._event",
    "RetryPolicy": "trainforge.events._webhooks",
    "SIGNATURE_HEADER": "trainforge.events._webhooks",
    "STAGE_CHANGED": "trainforge.events._event",
    "WebhookNotifier": "trainforge.events._webhooks",
    "sign": "trainforge.events._webhooks",
    "stage_event": "trainforge.events._event",
    "subscribe": "trainforge.events._webhooks",
}

__all__ = [
    "DRIFT_DETECTED",
    "Event",
    "KNOWN_EVENTS",
    "PROMOTION_REFUSED",
    "RetryPolicy",
    "SIGNATURE_HEADER",
    "STAGE_CHANGED",
    "VALIDATION_FAILED",
    "WebhookNotifier",
    "data_event",
    "sign",
    "stage_event",
    "subscribe",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
