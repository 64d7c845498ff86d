"""Data alerts of a pipeline run: each one a warning in the log and a POST to the webhooks
subscribed to its event (`trainforge webhooks add URL --events data.validation_failed`).

Rules:
- An alert never changes how the run goes: a delivery that fails is logged (and recorded as a
  webhook delivery); a store that cannot list the subscriptions is logged too.
- Deliveries run in the run's process within the notifier's time budget (`RetryPolicy`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from trainforge.errors import TrainforgeError
from trainforge.events import Event, WebhookNotifier
from trainforge.storage.contracts import WebhookStore

log = logging.getLogger("trainforge")

Alert = Callable[[Event], None]


class DataAlerts:
    """Announce data events: a log warning, then the subscribed webhooks (none without a
    store)."""

    def __init__(self, store: WebhookStore | None) -> None:
        self._notifier = None if store is None else WebhookNotifier(store, os.environ)

    def __call__(self, event: Event) -> None:
        log.warning("alert %s: %s", event.name, event.data.get("summary", ""))
        if self._notifier is None:
            return
        try:
            self._notifier.publish(event)
        except TrainforgeError as exc:
            log.warning("alert %s was not delivered: %s", event.name, exc)
