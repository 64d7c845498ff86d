"""The deliverer's decisions without I/O: the backoff schedule and when it gives up, what an
answer means, and which pending deliveries go now (in order per webhook and subject)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from trainforge.entities import DeliveryState, EventDelivery, OutboxEvent
from trainforge.events import BackoffPolicy, Verdict, due, next_attempt, retry_delay, verdict

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


def _delivery(delivery_id: int, outbox_id: int, *, webhook: int = 1, subject: str = "model:m",
              due_in_s: float = 0.0, leased_for_s: float | None = None,
              state: DeliveryState = DeliveryState.PENDING) -> EventDelivery:
    event = OutboxEvent(outbox_id, f"e{outbox_id}", "model.stage_changed", subject, T0)
    return EventDelivery(
        delivery_id, webhook, event, state, attempts=0, round_attempts=0, round_started_at=T0,
        next_attempt_at=T0 + timedelta(seconds=due_in_s),
        leased_until=None if leased_for_s is None else T0 + timedelta(seconds=leased_for_s),
        last_error=None, created_at=T0)


def test_the_default_schedule_doubles_from_seconds_to_hourly_and_gives_up_after_a_day() -> None:
    policy = BackoffPolicy()
    waits = [retry_delay(policy, n).total_seconds() for n in range(1, 12)]
    assert waits == [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600]
    now, attempts = T0, 0
    while (at := next_attempt(policy, round_attempts=attempts + 1, round_started_at=T0,
                              now=now)) is not None:
        now, attempts = at, attempts + 1
    assert timedelta(hours=23) < now - T0 <= timedelta(hours=24)
    assert 25 < attempts + 1 < 40  # the first attempt, and the retries of one day


def test_a_retry_past_the_round_is_not_made() -> None:
    policy = BackoffPolicy(first_delay_s=10, max_delay_s=100, give_up_after_s=60)
    assert next_attempt(policy, round_attempts=1, round_started_at=T0,
                        now=T0 + timedelta(seconds=50)) == T0 + timedelta(seconds=60)
    assert next_attempt(policy, round_attempts=1, round_started_at=T0,
                        now=T0 + timedelta(seconds=51)) is None
    later_round = T0 + timedelta(days=3)  # a redelivered delivery counts from its new round
    assert next_attempt(policy, round_attempts=1, round_started_at=later_round,
                        now=later_round) == later_round + timedelta(seconds=10)


@pytest.mark.parametrize(("status", "expected"), [
    (200, Verdict.DELIVERED), (204, Verdict.DELIVERED), (None, Verdict.RETRY),
    (500, Verdict.RETRY), (503, Verdict.RETRY), (408, Verdict.RETRY), (429, Verdict.RETRY),
    (400, Verdict.REFUSED), (401, Verdict.REFUSED), (404, Verdict.REFUSED),
    (301, Verdict.REFUSED),
])
def test_what_an_answer_means(status: int | None, expected: Verdict) -> None:
    assert verdict(status) is expected


def test_only_the_earliest_pending_event_of_a_subject_goes_per_webhook() -> None:
    pending = [_delivery(3, 12), _delivery(1, 10), _delivery(2, 11),
               _delivery(4, 11, webhook=2), _delivery(5, 13, subject="model:other")]
    assert [d.delivery_id for d in due(pending, now=T0, limit=10)] == [1, 4, 5]


def test_a_head_not_due_or_leased_holds_back_its_subject_and_nothing_else() -> None:
    pending = [_delivery(1, 10, due_in_s=30), _delivery(2, 11),
               _delivery(3, 20, subject="run:r", leased_for_s=60),
               _delivery(4, 21, subject="run:r"),
               _delivery(5, 30, subject="run:s", leased_for_s=-1)]  # a lease that ran out
    assert [d.delivery_id for d in due(pending, now=T0, limit=10)] == [5]
    later = T0 + timedelta(seconds=30)
    assert [d.delivery_id for d in due(pending, now=later, limit=10)] == [5, 1]  # soonest due


def test_deliveries_no_longer_pending_do_not_hold_back_later_ones() -> None:
    pending = [_delivery(1, 10, state=DeliveryState.DEAD),
               _delivery(2, 11, state=DeliveryState.DELIVERED), _delivery(3, 12)]
    assert [d.delivery_id for d in due(pending, now=T0, limit=10)] == [3]


def test_the_soonest_due_go_first_up_to_the_limit() -> None:
    pending = [_delivery(i, 10 + i, subject=f"model:m{i}", due_in_s=-i) for i in range(1, 6)]
    assert [d.delivery_id for d in due(pending, now=T0, limit=3)] == [5, 4, 3]


@pytest.mark.parametrize(("options", "problem"), [
    ({"first_delay_s": 0}, "BackoffPolicy.first_delay_s: expected a positive number, got 0"),
    ({"give_up_after_s": -1}, "BackoffPolicy.give_up_after_s: expected a positive number"),
    ({"batch": 0}, "BackoffPolicy.batch: expected a positive number"),
    ({"timeout_s": 30, "lease_s": 30}, "BackoffPolicy.lease_s: expected more than timeout_s"),
])
def test_a_bad_policy_is_refused_naming_the_field(options: dict[str, float],
                                                   problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace(".", r"\.")):
        BackoffPolicy(**options)  # type: ignore[arg-type]


def test_a_retry_delay_needs_a_failed_attempt() -> None:
    with pytest.raises(ValueError, match="round_attempts: expected 1 or more, got 0"):
        retry_delay(BackoffPolicy(), 0)
