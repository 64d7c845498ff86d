"""The deliverer's decisions, as pure functions of plain values: when to try again, what an
answer means, and which pending deliveries go now.

Rules:
- the n-th failed attempt of a round is followed by a wait of `first_delay_s * 2**(n-1)`,
  capped at `max_delay_s` (defaults: 10 s, 20 s, 40 s, ... then hourly); an attempt that
  would fall more than `give_up_after_s` (default 24 h) after the round began is not made:
  the delivery is `dead` (a round begins when the event is written, and again on redeliver);
- a 2xx answer delivers; a 5xx, 408 or 429 answer, no answer (refused, reset, timed out) or
  a secret that is not set is retried; any other answer (3xx, 4xx) is final: the receiver
  refused the event and sending it again would not change that (`dead`, and redeliver once
  the receiver is fixed);
- deliveries of one webhook about one subject go in the order of their events: only the
  earliest pending one of each (webhook, subject) may go, when it is due and no deliverer
  holds a live lease on it. Ties go to the one due first, then the lowest id.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta

from trainforge.entities import DeliveryState, EventDelivery

_RETRIED = (408, 429)


@dataclass(frozen=True)
class BackoffPolicy:
    """How deliveries are retried, and how a deliverer works: the first wait (doubling up to
    `max_delay_s`), when a round is given up, one attempt's HTTP timeout, how long a claimed
    delivery is held (longer than an attempt can take), how long the loop sleeps when nothing
    is due, and how many deliveries one pass looks at. `ValueError` naming the field for a
    value that is not positive, or a lease not longer than the timeout."""

    first_delay_s: float = 10.0
    max_delay_s: float = 3600.0
    give_up_after_s: float = 86_400.0
    timeout_s: float = 10.0
    lease_s: float = 60.0
    poll_s: float = 2.0
    batch: int = 100

    def __post_init__(self) -> None:
        for item in fields(self):
            if not getattr(self, item.name) > 0:
                raise ValueError(f"BackoffPolicy.{item.name}: expected a positive number, got "
                                 f"{getattr(self, item.name)!r}")
        if self.lease_s <= self.timeout_s:
            raise ValueError(f"BackoffPolicy.lease_s: expected more than timeout_s "
                             f"({self.timeout_s}), got {self.lease_s}")


class Verdict(str, enum.Enum):
    """What one attempt's answer means."""

    DELIVERED = "delivered"
    RETRY = "retry"
    REFUSED = "refused"


def verdict(status_code: int | None) -> Verdict:
    """The meaning of an answer (None: no answer, or nothing sent)."""
    if status_code is None or status_code >= 500 or status_code in _RETRIED:
        return Verdict.RETRY
    return Verdict.DELIVERED if 200 <= status_code < 300 else Verdict.REFUSED


def retry_delay(policy: BackoffPolicy, round_attempts: int) -> timedelta:
    """The wait after the `round_attempts`-th failed attempt of a round (>= 1)."""
    if round_attempts < 1:
        raise ValueError(f"round_attempts: expected 1 or more, got {round_attempts}")
    seconds = policy.first_delay_s * 2.0 ** min(round_attempts - 1, 62)
    return timedelta(seconds=min(seconds, policy.max_delay_s))


def next_attempt(policy: BackoffPolicy, *, round_attempts: int, round_started_at: datetime,
                 now: datetime) -> datetime | None:
    """When to try again after the `round_attempts`-th failed attempt of a round, made at
    `now`; None when that falls past the round's `give_up_after_s` (the delivery is dead)."""
    at = now + retry_delay(policy, round_attempts)
    if at > round_started_at + timedelta(seconds=policy.give_up_after_s):
        return None
    return at


def due(pending: Sequence[EventDelivery], *, now: datetime,
        limit: int) -> list[EventDelivery]:
    """The deliveries of `pending` to try at `now`, at most `limit`: of each (webhook,
    subject), the pending one of the earliest event, when it is due and not held by a live
    lease."""
    heads: dict[tuple[int, str], EventDelivery] = {}
    for delivery in (d for d in pending if d.state is DeliveryState.PENDING):
        key = (delivery.webhook_id, delivery.event.subject)
        if key not in heads or delivery.event.outbox_id < heads[key].event.outbox_id:
            heads[key] = delivery
    ready = [d for d in heads.values() if d.next_attempt_at <= now
             and (d.leased_until is None or d.leased_until <= now)]
    ready.sort(key=lambda d: (d.next_attempt_at, d.delivery_id))
    return ready[:limit]
