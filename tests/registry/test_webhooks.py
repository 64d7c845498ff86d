"""Webhooks against real HTTP servers on loopback, events sent from the outbox by a deliverer:
the signature checks out, 5xx and refused connections are retried with backoff, 4xx is not,
every attempt is logged, a secret that is not set is retried later, and the secret reaches no
record."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from webhook_receiver import FAST, SECRET, Clock, Receiver, deliver_all, serve

from trainforge.entities import (
    DeliveryState,
    ModelStage,
    StageChange,
    StageOutcome,
    WebhookDelivery,
)
from trainforge.events import BackoffPolicy, Deliverer, Event, stage_event, subscribe
from trainforge.storage import Store

# attempts at 0, 1, 3 and 7 s; the next would fall past 10 s
FOUR_ATTEMPTS = BackoffPolicy(first_delay_s=1.0, give_up_after_s=10.0, timeout_s=2.0,
                              lease_s=30.0)


@pytest.fixture
def healthy() -> Iterator[Receiver]:
    yield from serve([200])


@pytest.fixture
def flaky() -> Iterator[Receiver]:
    yield from serve([503, 502, 200])


@pytest.fixture
def refusing() -> Iterator[Receiver]:
    yield from serve([400])


def _change(outcome: StageOutcome = StageOutcome.PROMOTED) -> StageChange:
    from datetime import datetime, timezone

    gates = ({"gate": "g", "passed": True, "figures": {}, "message": "ok"},)
    return StageChange(7, "fraud_detector", "3", ModelStage.CANARY, ModelStage.PRODUCTION,
                       outcome, False, "ann", "better on March", gates,
                       datetime(2026, 11, 23, tzinfo=timezone.utc))


def _publish(store: Store, event: Event, environ: dict[str, str] | None = None,
             policy: BackoffPolicy = FAST) -> list[WebhookDelivery]:
    """Write `event` to the outbox, deliver until nothing is pending, and return its attempts,
    oldest first."""
    store.add_event(event.name, "model:fraud_detector", event.data, event_id=event.event_id,
                    occurred_at=event.occurred_at)
    clock = Clock()
    deliverer = Deliverer(store, {"HOOK_SECRET": SECRET} if environ is None else environ,
                          policy, clock)
    deliver_all(deliverer, clock, store)
    return [d for d in reversed(store.list_deliveries().items) if d.event_id == event.event_id]


def test_a_stage_change_is_posted_signed(store: Store, healthy: Receiver) -> None:
    hook = subscribe(store, healthy.url, ["model.stage_changed"], "HOOK_SECRET")
    event = stage_event(_change())
    [attempt] = _publish(store, event)
    assert (attempt.webhook_id, attempt.delivered, attempt.status_code) == (
        hook.webhook_id, True, 200)
    [(body, signed, headers)] = healthy.received
    assert signed and headers["X-Trainforge-Event"] == "model.stage_changed"
    assert body["event_id"] == event.event_id == headers["X-Trainforge-Delivery"]
    assert body["data"] | {"gates": None} == {
        "model": "fraud_detector", "version": "3", "from": "canary", "to": "production",
        "outcome": "promoted", "forced": False, "user": "ann", "reason": "better on March",
        "gates": None}


def test_server_errors_are_retried_until_delivered(store: Store, flaky: Receiver) -> None:
    subscribe(store, flaky.url, ["model.stage_changed"], "HOOK_SECRET")
    attempts = _publish(store, stage_event(_change()))
    assert [(a.attempt, a.status_code, a.delivered) for a in attempts] == [
        (1, 503, False), (2, 502, False), (3, 200, True)]
    assert len({body["event_id"] for body, _, _ in flaky.received}) == 1  # one event, resent
    logged = store.list_deliveries().items
    assert [(d.attempt, d.error) for d in logged] == [(3, None), (2, "HTTP 502"), (1, "HTTP 503")]


def test_a_client_error_is_final(store: Store, refusing: Receiver) -> None:
    subscribe(store, refusing.url, ["model.stage_changed"], "HOOK_SECRET")
    [attempt] = _publish(store, stage_event(_change()))
    assert (attempt.status_code, attempt.delivered, attempt.error) == (400, False, "HTTP 400")
    [delivery] = store.list_event_deliveries().items
    assert delivery.state is DeliveryState.DEAD and delivery.last_error == "HTTP 400"


def test_a_wrong_secret_is_refused_by_the_receiver(store: Store, healthy: Receiver) -> None:
    subscribe(store, healthy.url, ["model.stage_changed"], "HOOK_SECRET")
    [attempt] = _publish(store, stage_event(_change()), {"HOOK_SECRET": "another"})
    assert attempt.status_code == 401 and not healthy.received[0][1]


def test_a_closed_port_is_retried_with_backoff_then_given_up(store: Store) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subscribe(store, f"http://127.0.0.1:{port}/hook", ["model.stage_changed"], "HOOK_SECRET")
    attempts = _publish(store, stage_event(_change()), policy=FOUR_ATTEMPTS)
    assert [a.attempt for a in attempts] == [1, 2, 3, 4]
    assert all(a.status_code is None and "ConnectError" in (a.error or "") for a in attempts)
    [delivery] = store.list_event_deliveries().items
    assert (delivery.state, delivery.attempts) == (DeliveryState.DEAD, 4)


def test_only_subscribed_events_are_sent(store: Store, healthy: Receiver) -> None:
    subscribe(store, healthy.url, ["model.promotion_refused"], "HOOK_SECRET")
    assert _publish(store, stage_event(_change())) == []
    [attempt] = _publish(store, stage_event(_change(StageOutcome.REFUSED)))
    assert attempt.event == "model.promotion_refused" and attempt.delivered


def test_a_missing_secret_variable_is_logged_nothing_sent_and_retried_once_set(
    store: Store, healthy: Receiver
) -> None:
    subscribe(store, healthy.url, ["model.stage_changed"], "UNSET_SECRET")
    event = stage_event(_change())
    store.add_event(event.name, "model:fraud_detector", event.data, event_id=event.event_id,
                    occurred_at=event.occurred_at)
    clock = Clock()
    Deliverer(store, {}, FAST, clock).run_once()
    [attempt] = store.list_deliveries().items
    assert not attempt.delivered and "UNSET_SECRET (the signing secret) is not set" in (
        attempt.error or "")
    assert healthy.received == []
    [waiting] = store.list_event_deliveries().items
    assert waiting.state is DeliveryState.PENDING and waiting.next_attempt_at > clock()

    restarted = Deliverer(store, {"UNSET_SECRET": SECRET}, FAST, clock)  # the operator set it
    deliver_all(restarted, clock, store)
    [(body, signed, _)] = healthy.received
    assert signed and body["event_id"] == event.event_id
    assert [a.delivered for a in store.list_deliveries().items] == [True, False]


@pytest.mark.parametrize(("url", "events", "env", "problem"), [
    ("ftp://host/x", ["model.stage_changed"], "S", "expected http(s)://host"),
    ("http:///x", ["model.stage_changed"], "S", "expected http(s)://host"),
    ("http://h/x", ["model.deleted"], "S", "expected one or more of model.stage_changed"),
    ("http://h/x", [], "S", "expected one or more of"),
    ("http://h/x", ["model.stage_changed"], "MY-SECRET", "expected an environment variable"),
])
def test_bad_subscriptions_are_refused_naming_the_argument(
    store: Store, url: str, events: list[str], env: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        subscribe(store, url, events, env)
    assert store.list_webhooks().items == ()


def test_the_secret_reaches_no_record(store: Store, healthy: Receiver) -> None:
    subscribe(store, healthy.url, ["model.stage_changed"], "HOOK_SECRET")
    _publish(store, stage_event(_change()))
    records = [*store.list_webhooks().items, *store.list_deliveries().items,
               *store.list_event_deliveries().items]
    assert SECRET not in repr(records)
