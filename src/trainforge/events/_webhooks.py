"""Webhook subscriptions and what a webhook request holds (the deliverer sends it).

Rules:
- the body is the event's JSON (`Event.body`), UTF-8; the header `X-Trainforge-Signature`
  is `sha256=<hex HMAC-SHA256 of the body>` keyed by the subscription's secret, read when
  the request is made from the environment variable the subscription names (never stored,
  never logged). `X-Trainforge-Event` names the event, `X-Trainforge-Delivery` repeats its
  id (the same in every attempt: a receiver drops repeats by it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from trainforge.entities import Webhook
from trainforge.events._event import KNOWN_EVENTS, Event
from trainforge.storage.contracts import WebhookStore

SIGNATURE_HEADER = "X-Trainforge-Signature"
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


def request(event: Event, secret: str) -> tuple[bytes, dict[str, str]]:
    """The body and headers of the webhook request announcing `event`, signed with `secret`."""
    body = json.dumps(event.body(), sort_keys=True, default=str).encode()
    return body, {"Content-Type": "application/json", SIGNATURE_HEADER: sign(body, secret),
                  "X-Trainforge-Event": event.name, "X-Trainforge-Delivery": event.event_id}
