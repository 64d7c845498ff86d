"""The outbox on SQLite and PostgreSQL: events commit or roll back with what they announce; a
receiver that was down gets every event once, in order per model and per run; deliverers
racing send each event once; redeliver, and its bad inputs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError
from webhook_receiver import FAST, SECRET, Clock, Receiver, come_up, deliver_all, serve

from trainforge.entities import DeliveryState, ModelStage, ModelVersion, StageOutcome
from trainforge.errors import Conflict, NotFound
from trainforge.events import Deliverer, subscribe
from trainforge.storage import SqlStore, Store, open_store

ENVIRON = {"HOOK_SECRET": SECRET}
MODEL_EVENTS = ["model.stage_changed", "model.promotion_refused"]
DATA_EVENTS = ["data.validation_failed", "data.drift_detected"]


@pytest.fixture
def healthy() -> Iterator[Receiver]:
    yield from serve([200])


def _versions(store: Store, model: str = "m", count: int = 2) -> list[ModelVersion]:
    experiment = store.get_or_create_experiment("outbox")
    run = store.create_run(experiment.experiment_id, {}, {}, "file:///runs/a")
    return [store.create_model_version(model, run.run_id, f"file:///{model}/{i}",
                                       ModelStage.STAGING, {}) for i in range(count)]


def _to_production(store: Store, version: str, holder: str | None, model: str = "m") -> None:
    store.change_stage(model, version, ModelStage.PRODUCTION, expected_from=ModelStage.STAGING,
                       expected_holder=holder, user="ann", reason=f"v{version}")


def _write(store: Store, subject: str, count: int) -> list[str]:
    """`count` events about `subject` written to the outbox; their ids in order."""
    name = "model.stage_changed" if subject.startswith("model:") else "data.drift_detected"
    return [store.add_event(name, subject, {"n": n}, event_id=f"{subject}-{n}",
                            occurred_at=datetime.now(timezone.utc)).event_id
            for n in range(count)]


def _by_subject(bodies: list[dict[str, str]]) -> dict[str, list[str]]:
    """The event ids received, grouped by the subject their id starts with, in arrival order."""
    grouped: dict[str, list[str]] = {}
    for body in bodies:
        grouped.setdefault(body["event_id"].rsplit("-", 1)[0], []).append(body["event_id"])
    return grouped


def test_stage_changes_and_refusals_are_written_with_their_events(
    store: Store, healthy: Receiver
) -> None:
    hook = subscribe(store, healthy.url, MODEL_EVENTS, "HOOK_SECRET")
    first, second = _versions(store)
    _to_production(store, first.version, None)
    _to_production(store, second.version, first.version)
    store.record_refusal("m", first.version, ModelStage.PRODUCTION, user="bob", reason="again",
                         gate_report=[])

    history = store.list_stage_changes("m").items
    announced = [d.event for d in reversed(store.list_event_deliveries().items)]
    assert [e.stage_change for e in announced] == [
        h for h in history if h.outcome is not StageOutcome.REGISTERED]
    assert [(e.name, e.subject) for e in announced] == [
        ("model.stage_changed", "model:m")] * 3 + [("model.promotion_refused", "model:m")]
    assert {d.webhook_id for d in store.list_event_deliveries().items} == {hook.webhook_id}
    assert healthy.received == [], "writing an event sends nothing"


def _refuse_outbox_writes(url: str) -> None:
    """A trigger that makes every insert into the outbox fail, as a full disk would."""
    engine = create_engine(url)
    with engine.begin() as connection:
        if engine.dialect.name == "sqlite":
            connection.execute(text("CREATE TRIGGER refuse_outbox BEFORE INSERT ON "
                                    "outbox_events BEGIN SELECT RAISE(ABORT, 'refused'); END"))
        else:
            connection.execute(text(
                "CREATE FUNCTION refuse_outbox() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION "
                "'refused' USING ERRCODE = 'check_violation'; END $$ LANGUAGE plpgsql"))
            connection.execute(text("CREATE TRIGGER refuse_outbox BEFORE INSERT ON "
                                    "outbox_events FOR EACH ROW EXECUTE FUNCTION "
                                    "refuse_outbox()"))
    engine.dispose()


@pytest.fixture
def own_store(db_url: str) -> Iterator[Store]:
    """A store on a database of the test's own, at `db_url` (`store` is shared)."""
    opened = open_store(db_url)
    try:
        yield opened
    finally:
        opened.close()


def test_what_an_event_announces_rolls_back_when_its_event_cannot_be_written(
    db_url: str, own_store: Store
) -> None:
    store = own_store
    subscribe(store, "http://127.0.0.1:9/hook", [*MODEL_EVENTS, *DATA_EVENTS], "HOOK_SECRET")
    first, _ = _versions(store)
    run_id = first.run_id
    _refuse_outbox_writes(db_url)

    with pytest.raises(Conflict):
        _to_production(store, first.version, None)
    with pytest.raises(IntegrityError):
        store.record_refusal("m", first.version, ModelStage.PRODUCTION, user="bob",
                             reason="x", gate_report=[])
    with pytest.raises(IntegrityError):
        store.set_tags_and_announce(run_id, {"drift": {"drifted": True}}, "data.drift_detected",
                                    {"run_id": run_id}, event_id="e1",
                                    occurred_at=datetime.now(timezone.utc))

    assert store.get_model_version("m", first.version).stage is ModelStage.STAGING
    assert [h.outcome for h in store.list_stage_changes("m").items] == [
        StageOutcome.REGISTERED, StageOutcome.REGISTERED]
    assert "drift" not in store.get_run(run_id).tags
    assert store.list_event_deliveries().items == ()


def test_an_alerts_tags_and_event_are_written_together(store: Store) -> None:
    subscribe(store, "http://127.0.0.1:9/hook", DATA_EVENTS, "HOOK_SECRET")
    [version] = _versions(store, count=1)
    event = store.set_tags_and_announce(version.run_id, {"drift": {"drifted": True}},
                                        "data.drift_detected", {"summary": "amount: psi 0.4"},
                                        event_id="d1", occurred_at=datetime.now(timezone.utc))
    assert store.get_run(version.run_id).tags["drift"] == {"drifted": True}
    assert (event.subject, event.data) == (f"run:{version.run_id}", {"summary": "amount: psi 0.4"})
    [delivery] = store.list_event_deliveries(DeliveryState.PENDING).items
    assert delivery.event == event
    with pytest.raises(NotFound, match="run 'nope' not found"):
        store.set_tags_and_announce("nope", {}, "data.drift_detected", {}, event_id="d2",
                                    occurred_at=datetime.now(timezone.utc))
    assert len(store.list_event_deliveries().items) == 1


def test_a_sessions_publisher_writes_an_alerts_tags_and_event_to_the_outbox(
        store: Store) -> None:
    from trainforge.events import Event, OutboxPublisher

    subscribe(store, "http://127.0.0.1:9/hook", DATA_EVENTS, "HOOK_SECRET")
    [version] = _versions(store, count=1)
    event = Event("data.validation_failed", {"summary": "3 rows broken"}, event_id="v1")
    OutboxPublisher(store).record_and_announce(version.run_id, {"validation": {"passed": False}},
                                               event)
    assert store.get_run(version.run_id).tags["validation"] == {"passed": False}
    [delivery] = store.list_event_deliveries(DeliveryState.PENDING).items
    assert (delivery.event.event_id, delivery.event.subject) == ("v1", f"run:{version.run_id}")


@pytest.mark.parametrize("down", ["refused", "503"])
def test_a_receiver_down_for_a_while_gets_every_event_once_in_order(
    store: Store, down: str
) -> None:
    # down: the port refuses connections until the receiver comes up, or it answers 503 to
    # the first three requests
    receiver = Receiver([503, 503, 503, 200] if down == "503" else [200],
                        listening=down == "503")
    if down == "503":
        come_up(receiver)
    subscribe(store, receiver.url, [*MODEL_EVENTS, *DATA_EVENTS], "HOOK_SECRET")
    written = {"model:a": _write(store, "model:a", 3), "model:b": _write(store, "model:b", 2),
               "run:r1": _write(store, "run:r1", 2)}
    clock = Clock()
    deliverer = Deliverer(store, ENVIRON, FAST, clock)
    try:
        if down == "refused":
            deliverer.run_once()  # each subject's first event, refused
            come_up(receiver)
        deliver_all(deliverer, clock, store)
    finally:
        receiver.shutdown()
        receiver.server_close()

    assert _by_subject(receiver.accepted()) == written
    assert all(signed for _, signed, _ in receiver.received)
    delivered = store.list_event_deliveries().items
    assert {d.state for d in delivered} == {DeliveryState.DELIVERED}
    attempts = store.list_deliveries().items
    assert sum(a.delivered for a in attempts) == 7
    assert len(attempts) == 7 + 3, "three attempts of the subjects' first events failed"
    assert {a.attempt for a in attempts if not a.delivered} == {1}


def test_deliverers_racing_send_each_event_once(db_url: str, own_store: Store,
                                                healthy: Receiver) -> None:
    store = own_store
    subscribe(store, healthy.url, [*MODEL_EVENTS, *DATA_EVENTS], "HOOK_SECRET")
    written = {subject: _write(store, subject, 5) for subject in ("model:a", "model:b", "run:r")}
    stores = [SqlStore(db_url) for _ in range(3)]  # each as another process would open it
    start = threading.Barrier(len(stores))

    def deliver(own: SqlStore) -> None:
        deliverer = Deliverer(own, ENVIRON, FAST)
        start.wait()
        for _ in range(200):
            if not own.list_event_deliveries(DeliveryState.PENDING).items:
                return
            if not deliverer.run_once().attempts:
                time.sleep(0.01)  # another deliverer holds the next one

    threads = [threading.Thread(target=deliver, args=(own,)) for own in stores]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for own in stores:
            own.close()

    accepted = healthy.accepted()
    assert _by_subject(accepted) == written and len(accepted) == 15
    attempts = store.list_deliveries().items
    assert len(attempts) == 15 and all(a.attempt == 1 and a.delivered for a in attempts)


@pytest.fixture
def refusing_once() -> Iterator[Receiver]:
    yield from serve([400, 200])


def test_redeliver_sends_a_dead_or_delivered_one_again(store: Store,
                                                       refusing_once: Receiver) -> None:
    subscribe(store, refusing_once.url, MODEL_EVENTS, "HOOK_SECRET")
    [event_id] = _write(store, "model:a", 1)
    clock = Clock()
    deliverer = Deliverer(store, ENVIRON, FAST, clock)
    deliver_all(deliverer, clock, store)
    [dead] = store.list_event_deliveries().items
    assert (dead.state, dead.last_error) == (DeliveryState.DEAD, "HTTP 400")

    again = store.redeliver(dead.delivery_id, clock())
    assert (again.state, again.round_attempts) == (DeliveryState.PENDING, 0)
    deliver_all(deliverer, clock, store)
    store.redeliver(dead.delivery_id, clock())  # delivered, and sent again on purpose
    deliver_all(deliverer, clock, store)

    assert [body["event_id"] for body in refusing_once.accepted()] == [event_id, event_id]
    attempts = list(reversed(store.list_deliveries().items))
    assert [(a.attempt, a.status_code) for a in attempts] == [(1, 400), (2, 200), (3, 200)]
    assert {a.event_delivery_id for a in attempts} == {dead.delivery_id}


def test_redeliver_of_an_unknown_or_pending_delivery_is_refused_naming_it(store: Store) -> None:
    subscribe(store, "http://127.0.0.1:9/hook", MODEL_EVENTS, "HOOK_SECRET")
    _write(store, "model:a", 1)
    [pending] = store.list_event_deliveries().items
    with pytest.raises(NotFound, match="delivery 999 not found"):
        store.redeliver(999, datetime.now(timezone.utc))
    with pytest.raises(NotFound, match="delivery 999 not found"):
        store.get_event_delivery(999)
    with pytest.raises(Conflict, match=f"delivery {pending.delivery_id} is pending already"):
        store.redeliver(pending.delivery_id, datetime.now(timezone.utc))
    assert store.get_event_delivery(pending.delivery_id) == pending


def test_a_claim_is_a_lease_that_one_deliverer_holds_until_it_runs_out(store: Store) -> None:
    subscribe(store, "http://127.0.0.1:9/hook", MODEL_EVENTS, "HOOK_SECRET")
    _write(store, "model:a", 2)
    first, second = reversed(store.list_event_deliveries().items)
    now = datetime.now(timezone.utc)
    lease = now + timedelta(hours=1)
    assert store.claim_delivery(second.delivery_id, "a", now=now, leased_until=lease) is None, \
        "an earlier event of its subject is pending"
    held = store.claim_delivery(first.delivery_id, "a", now=now, leased_until=lease)
    assert held is not None and held.leased_until == lease
    assert store.claim_delivery(first.delivery_id, "b", now=now, leased_until=lease) is None
    taken_over = store.claim_delivery(first.delivery_id, "b", now=lease,  # it ran out
                                      leased_until=lease + timedelta(hours=1))
    assert taken_over is not None
    store.finish_delivery(first.delivery_id, "a", status_code=200, error=None,
                          state=DeliveryState.DELIVERED, next_attempt_at=None)
    assert store.get_event_delivery(first.delivery_id).state is DeliveryState.PENDING, \
        "a lease taken over is left to its new holder"
    [logged] = store.list_deliveries().items
    assert (logged.attempt, logged.event_delivery_id) == (1, first.delivery_id)
