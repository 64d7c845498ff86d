"""The deliverer: sends the outbox's pending deliveries to their webhooks, off the path of the
commands that wrote them.

    >>> deliverer = Deliverer(store, os.environ)                     # doctest: +SKIP
    >>> deliverer.run_once()                                         # doctest: +SKIP
    >>> deliverer.run(stop)             # until stop.set(), in a thread  # doctest: +SKIP

Rules:
- a pass (`run_once`) claims each delivery that is due (`_backoff.due` over the store's
  `delivery_heads`), makes one attempt, and records it with its outcome (`finish_delivery`):
  delivered, retried later (`next_attempt`) or dead. It goes round again while a round made
  an attempt, so a webhook's later events follow an earlier one delivered in the same pass;
  it returns when nothing is due;
- every attempt is logged in the store (`trainforge webhooks deliveries`); a subscription
  whose secret variable is not set in `environ` gets an attempt logged as not sent, retried
  like a failed one (set the variable and restart the deliverer);
- several deliverers may share a database (`serve` beside `webhooks deliver --loop`, or
  machines on PostgreSQL): a claim is a lease in the store, so a pending attempt is sent by
  one of them; a deliverer that dies holding one leaves it to the others when it runs out
  (`BackoffPolicy.lease_s`, longer than an attempt may take);
- `run(stop)` is what an entry point starts in a background thread (`trainforge serve`, a
  worker, the server): passes until `stop` is set, a pause of `poll_s` between them; a pass
  that cannot reach the store is logged and tried again after the pause;
- one `Deliverer` per thread (each holds its own HTTP client for a pass).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Protocol

from trainforge.entities import DeliveryState, EventDelivery, Webhook
from trainforge.errors import StoreUnavailable
from trainforge.events._backoff import BackoffPolicy, Verdict, due, next_attempt, verdict
from trainforge.events._event import outbox_event
from trainforge.events._webhooks import request
from trainforge.storage.contracts import OutboxStore, WebhookStore, all_items

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("trainforge")
Clock = Callable[[], datetime]


class DelivererStore(OutboxStore, WebhookStore, Protocol):
    """What a deliverer reads and writes: the outbox and the subscriptions."""


@dataclass(frozen=True)
class Pass:
    """What one pass did: attempts made, and how many ended delivered, to be retried, dead."""

    attempts: int = 0
    delivered: int = 0
    retrying: int = 0
    dead: int = 0

    def __add__(self, other: Pass) -> Pass:
        return Pass(self.attempts + other.attempts, self.delivered + other.delivered,
                    self.retrying + other.retrying, self.dead + other.dead)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Deliverer:
    """Delivers the outbox of `store` to its webhooks; `environ` holds their secrets (the entry
    point passes the process environment); `clock` tells the time (UTC)."""

    def __init__(self, store: DelivererStore, environ: Mapping[str, str],
                 policy: BackoffPolicy | None = None, clock: Clock = _utcnow) -> None:
        self._store = store
        self._environ = environ
        self._policy = policy or BackoffPolicy()
        self._clock = clock
        self.owner = uuid.uuid4().hex  # names this deliverer's leases

    def run_once(self) -> Pass:
        """Deliver what is due now, round after round while a round made an attempt."""
        import httpx

        done = Pass()
        with httpx.Client(follow_redirects=False, timeout=self._policy.timeout_s) as client:
            while True:
                made = self._round(client)
                done += made
                if not made.attempts:
                    return done

    def run(self, stop: threading.Event) -> None:
        """Passes until `stop` is set (see the module docstring)."""
        while not stop.is_set():
            try:
                self.run_once()
            except StoreUnavailable as exc:
                log.warning("deliverer: the store cannot be reached, trying again in %gs: %s",
                            self._policy.poll_s, exc)
            stop.wait(self._policy.poll_s)

    def _round(self, client: httpx.Client) -> Pass:
        chosen = due(self._store.delivery_heads(self._policy.batch), now=self._clock(),
                     limit=self._policy.batch)
        hooks: dict[int, Webhook] = {}
        if chosen:
            hooks = {hook.webhook_id: hook for hook in all_items(
                lambda cursor: self._store.list_webhooks(cursor=cursor))}
        done = Pass()
        for delivery in chosen:
            now = self._clock()
            claimed = self._store.claim_delivery(
                delivery.delivery_id, self.owner, now=now,
                leased_until=now + timedelta(seconds=self._policy.lease_s))
            if claimed is not None:
                done += self._attempt(client, hooks[claimed.webhook_id], claimed)
        return done

    def _attempt(self, client: httpx.Client, hook: Webhook, delivery: EventDelivery) -> Pass:
        status, error = self._send(client, hook, delivery)
        outcome = verdict(status)
        state, retry_at = DeliveryState.PENDING, None
        if outcome is Verdict.DELIVERED:
            state = DeliveryState.DELIVERED
        elif outcome is Verdict.RETRY:
            retry_at = next_attempt(self._policy, round_attempts=delivery.round_attempts + 1,
                                    round_started_at=delivery.round_started_at,
                                    now=self._clock())
        if outcome is Verdict.REFUSED or (outcome is Verdict.RETRY and retry_at is None):
            state = DeliveryState.DEAD
            log.warning("webhook %d (%s): delivery %d of %s given up after %d attempt(s): %s "
                        "(trainforge webhooks redeliver %d)", hook.webhook_id, hook.url,
                        delivery.delivery_id, delivery.event.name, delivery.attempts + 1, error,
                        delivery.delivery_id)
        self._store.finish_delivery(delivery.delivery_id, self.owner, status_code=status,
                                    error=error, state=state, next_attempt_at=retry_at)
        return Pass(1, int(state is DeliveryState.DELIVERED),
                    int(state is DeliveryState.PENDING), int(state is DeliveryState.DEAD))

    def _send(self, client: httpx.Client, hook: Webhook,
              delivery: EventDelivery) -> tuple[int | None, str | None]:
        """One attempt: the HTTP status answered (None when none came) and the error."""
        import httpx

        secret = self._environ.get(hook.secret_env)
        if not secret:
            log.warning("webhook %d (%s): %s not sent: environment variable %s is not set",
                        hook.webhook_id, hook.url, delivery.event.name, hook.secret_env)
            return None, (f"environment variable {hook.secret_env} (the signing secret) is "
                          "not set: not sent")
        body, headers = request(outbox_event(delivery.event), secret)
        try:
            answer = client.post(hook.url, content=body, headers=headers)
        except httpx.TransportError as exc:
            return None, f"{type(exc).__name__}: {exc}"
        code = answer.status_code
        return code, None if 200 <= code < 300 else f"HTTP {code}"
