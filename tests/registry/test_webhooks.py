"""Webhooks against real HTTP servers on loopback: the signature checks out, 5xx and refused
connections are retried with backoff, 4xx is not, every attempt is logged, and the secret
reaches no record."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from webhook_receiver import SECRET, Receiver, serve

from trainforge.entities import ModelStage, StageChange, StageOutcome
from trainforge.events import RetryPolicy, WebhookNotifier, stage_event, subscribe
from trainforge.storage import Store

FAST = RetryPolicy(attempts=4, base_delay_s=0.05, timeout_s=2.0, budget_s=10.0)


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


def _notifier(store: Store) -> WebhookNotifier:
    return WebhookNotifier(store, {"HOOK_SECRET": SECRET}, FAST)


def test_a_stage_change_is_posted_signed(store: Store, healthy: Receiver) -> None:
    hook = subscribe(store, healthy.url, ["model.stage_changed"], "HOOK_SECRET")
    event = stage_event(_change())
    [attempt] = _notifier(store).publish(event)
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
    attempts = _notifier(store).publish(stage_event(_change()))
    assert [(a.attempt, a.status_code, a.delivered) for a in attempts] == [
        (1, 503, False), (2, 502, False), (3, 200, True)]
    assert len({body["event_id"] for body, _, _ in flaky.received}) == 1  # one event, resent
    logged = store.list_deliveries().items
    assert [(d.attempt, d.error) for d in logged] == [(3, None), (2, "HTTP 502"), (1, "HTTP 503")]


def test_a_client_error_is_final(store: Store, refusing: Receiver) -> None:
    subscribe(store, refusing.url, ["model.stage_changed"], "HOOK_SECRET")
    [attempt] = _notifier(store).publish(stage_event(_change()))
    assert (attempt.status_code, attempt.delivered, attempt.error) == (400, False, "HTTP 400")


def test_a_wrong_secret_is_refused_by_the_receiver(store: Store, healthy: Receiver) -> None:
    subscribe(store, healthy.url, ["model.stage_changed"], "HOOK_SECRET")
    notifier = WebhookNotifier(store, {"HOOK_SECRET": "another"}, FAST)
    [attempt] = notifier.publish(stage_event(_change()))
    assert attempt.status_code == 401 and not healthy.received[0][1]


def test_a_closed_port_is_retried_then_given_up_within_the_budget(store: Store) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subscribe(store, f"http://127.0.0.1:{port}/hook", ["model.stage_changed"], "HOOK_SECRET")
    attempts = _notifier(store).publish(stage_event(_change()))
    assert [a.attempt for a in attempts] == [1, 2, 3, 4]
    assert all(a.status_code is None and "ConnectError" in (a.error or "") for a in attempts)


def test_only_subscribed_events_are_sent(store: Store, healthy: Receiver) -> None:
    subscribe(store, healthy.url, ["model.promotion_refused"], "HOOK_SECRET")
    assert _notifier(store).publish(stage_event(_change())) == []
    [attempt] = _notifier(store).publish(stage_event(_change(StageOutcome.REFUSED)))
    assert attempt.event == "model.promotion_refused" and attempt.delivered


def test_a_missing_secret_variable_is_logged_and_nothing_sent(store: Store,
                                                             healthy: Receiver) -> None:
    subscribe(store, healthy.url, ["model.stage_changed"], "UNSET_SECRET")
    [attempt] = _notifier(store).publish(stage_event(_change()))
    assert not attempt.delivered and "UNSET_SECRET (the signing secret) is not set" in (
        attempt.error or "")
    assert healthy.received == []


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
    _notifier(store).publish(stage_event(_change()))
    records = [*store.list_webhooks().items, *store.list_deliveries().items]
    assert SECRET not in repr(records)
