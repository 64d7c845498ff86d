"""Webhook delivery: an event POSTed as JSON to every subscription that wants it, signed,
retried, and every attempt logged in the store.

Rules:
- the body is the event's JSON (`Event.body`), UTF-8; the header `X-Trainforge-Signature`
  is `sha256=<hex HMAC-SHA256 of the body>` keyed by the subscription's secret, read at
  delivery from the environment variable the subscription names (never stored, never
  logged). `X-Trainforge-Event` names the event, `X-Trainforge-Delivery` repeats its id;
- a 2xx answer delivers; a 5xx answer or a connection failure (refused, reset, timed out) is
  retried after `base_delay_s`, doubling each time, up to `attempts`; any other answer
  (4xx, 3xx) is final: the receiver refused it and sending again would not change that;
- one `publish` call spends at most `budget_s` in all (attempt timeouts and waits shrink to
  fit), so a failing receiver never holds up its caller for long: a promotion is committed
  before it is announced and is never rolled back for a webhook;
- a subscription whose secret variable is not set gets one logged attempt saying so, and
  nothing is sent.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from trainforge.entities import Webhook, WebhookDelivery
from trainforge.events._event import KNOWN_EVENTS, Event
from trainforge.storage.contracts import WebhookStore, all_items

log = logging.getLogger("trainforge")

SIGNATURE_HEADER = "X-Trainforge-Signature"
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one `publish` tries: attempts per subscription, the first wait (doubling),
    one attempt's timeout, and the time the whole call may take."""

    attempts: int = 4
    base_delay_s: float = 0.5
    timeout_s: float = 5.0
    budget_s: float = 15.0


def subscribe(store: WebhookStore, url: str, events: Sequence[str],
              secret_env: str) -> Webhook:
    """Store a subscription of `url` to `events`, signed with the secret in the environment
    variable `secret_env`; `ValueError` naming the argument for a URL that is not http(s)
    with a host, an unknown or missing event, or a malformed variable name."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"webhook URL {url!r}: expected http(s)://host[:port]/path")
    unknown = [name for name in events if name not in KNOWN_EVENTS]
    if unknown or not events:
        raise ValueError(f"events {list(events)!r}: expected one or more of "
                         f"{', '.join(KNOWN_EVENTS)}")
    if not _VARIABLE_NAME.fullmatch(secret_env):
        raise ValueError(f"secret variable {secret_env!r}: expected an environment variable "
                         "name (letters, digits, underscores)")
    return store.add_webhook(url, list(dict.fromkeys(events)), secret_env)


def sign(body: bytes, secret: str) -> str:
    """The signature header's value: `sha256=` and the hex HMAC-SHA256 of `body`."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


class WebhookNotifier:
    """Delivers events to the subscriptions in `store`; `environ` holds their secrets (the
    entry point passes the process environment). Safe to share between threads."""

    def __init__(self, store: WebhookStore, environ: Mapping[str, str],
                 policy: RetryPolicy | None = None) -> None:
        self._store = store
        self._environ = environ
        self._policy = policy or RetryPolicy()

    def publish(self, event: Event) -> list[WebhookDelivery]:
        """Deliver `event` to each subscription that wants it; every attempt, logged."""
        deadline = time.monotonic() + self._policy.budget_s
        wanted = [hook for hook in all_items(lambda cursor: self._store.list_webhooks(
            cursor=cursor)) if event.name in hook.events]
        body = json.dumps(event.body(), sort_keys=True, default=str).encode()
        attempts: list[WebhookDelivery] = []
        for hook in wanted:
            attempts += self._deliver(hook, event, body, deadline)
        return attempts

    def _deliver(self, hook: Webhook, event: Event, body: bytes,
                 deadline: float) -> list[WebhookDelivery]:
        import httpx

        secret = self._environ.get(hook.secret_env)
        if not secret:
            return [self._log(hook, event, 1, None, f"environment variable {hook.secret_env} "
                              "(the signing secret) is not set: not sent")]
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(body, secret),
                   "X-Trainforge-Event": event.name, "X-Trainforge-Delivery": event.event_id}
        logged: list[WebhookDelivery] = []
        with httpx.Client(follow_redirects=False) as client:
            for attempt in range(1, self._policy.attempts + 1):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    answer = client.post(hook.url, content=body, headers=headers,
                                         timeout=min(self._policy.timeout_s, left))
                except httpx.TransportError as exc:
                    logged.append(self._log(hook, event, attempt, None,
                                            f"{type(exc).__name__}: {exc}"))
                else:
                    code = answer.status_code
                    error = None if 200 <= code < 300 else f"HTTP {code}"
                    logged.append(self._log(hook, event, attempt, code, error))
                    if code < 500:
                        return logged
                wait = self._policy.base_delay_s * 2 ** (attempt - 1)
                if attempt < self._policy.attempts:
                    time.sleep(max(0.0, min(wait, deadline - time.monotonic())))
        log.warning("webhook %d (%s): %s not delivered after %d attempt(s)", hook.webhook_id,
                    hook.url, event.name, len(logged))
        return logged

    def _log(self, hook: Webhook, event: Event, attempt: int, status: int | None,
             error: str | None) -> WebhookDelivery:
        return self._store.record_delivery(hook.webhook_id, event.event_id, event.name, attempt,
                                           status, error, delivered=error is None)
