"""`trainforge webhooks deliver | outbox | redeliver` as a user runs them (real processes): one
pass, a loop stopped by SIGTERM, the outbox listed by state, and bad delivery ids refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from home import home_store
from webhook_receiver import SECRET, Receiver, serve

from trainforge.entities import DeliveryState
from trainforge.events import subscribe

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


def _env() -> dict[str, str]:
    """The test's environment (its isolated TRAINFORGE_HOME) with the signing secret."""
    return {**os.environ, "HOOK_SECRET": SECRET}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, env=_env(),
                          timeout=120)


@pytest.fixture
def refusing() -> Iterator[Receiver]:
    yield from serve([400, 200])


def _announce(receiver: Receiver, count: int) -> None:
    store = home_store()
    subscribe(store, receiver.url, ["model.stage_changed"], "HOOK_SECRET")
    for n in range(count):
        store.add_event("model.stage_changed", "model:m", {"n": n}, event_id=f"e{n}",
                        occurred_at=datetime.now(timezone.utc))


@pytest.mark.slow
def test_one_pass_then_redeliver_the_dead_one(refusing: Receiver) -> None:
    _announce(refusing, 2)
    done = cli("webhooks", "deliver", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"attempts": 2, "delivered": 1, "retrying": 0, "dead": 1}
    dead = json.loads(cli("webhooks", "outbox", "--state", "dead", "--json").stdout)
    assert [(d["event_id"], d["last_error"]) for d in dead] == [("e0", "HTTP 400")]

    again = cli("webhooks", "redeliver", str(dead[0]["delivery"]))
    assert again.returncode == 0 and "pending again" in again.stdout
    assert json.loads(cli("webhooks", "deliver", "--json").stdout)["delivered"] == 1
    assert [body["event_id"] for body in refusing.accepted()] == ["e1", "e0"]
    attempts = json.loads(cli("webhooks", "deliveries", "--json").stdout)
    assert [(a["event_id"], a["attempt"], a["status"]) for a in attempts] == [
        ("e0", 2, 200), ("e1", 1, 200), ("e0", 1, 400)]


def test_bad_delivery_ids_are_refused_naming_them(refusing: Receiver) -> None:
    _announce(refusing, 1)
    [pending] = home_store().list_event_deliveries().items
    unknown = cli("webhooks", "redeliver", "999")
    assert unknown.returncode == 1 and "delivery 999 not found" in unknown.stderr
    waiting = cli("webhooks", "redeliver", str(pending.delivery_id))
    assert waiting.returncode == 2
    assert f"delivery {pending.delivery_id} is pending already" in waiting.stderr
    not_a_number = cli("webhooks", "redeliver", "first")
    assert not_a_number.returncode == 2 and "DELIVERY" in not_a_number.stderr
    bad_state = cli("webhooks", "outbox", "--state", "lost")
    assert bad_state.returncode == 2 and "pending" in bad_state.stderr


def test_the_loop_delivers_until_sigterm(refusing: Receiver) -> None:
    _announce(refusing, 1)  # refused (400): dead after one attempt
    store = home_store()
    loop = subprocess.Popen([TRAINFORGE, "webhooks", "deliver", "--loop"], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        [first] = store.list_event_deliveries().items
        while store.get_event_delivery(first.delivery_id).state is DeliveryState.PENDING:
            assert loop.poll() is None, loop.communicate()
            time.sleep(0.05)
        store.add_event("model.stage_changed", "model:m", {}, event_id="later",
                        occurred_at=datetime.now(timezone.utc))  # the loop's next pass sends it
        while len(refusing.accepted()) < 1:
            assert loop.poll() is None, loop.communicate()
            time.sleep(0.05)
    finally:
        loop.send_signal(signal.SIGTERM)
        _, stderr = loop.communicate(timeout=60)
    assert loop.returncode == 0, stderr
    assert [body["event_id"] for body in refusing.accepted()] == ["later"]



def test_serve_delivers_in_a_background_thread_while_it_serves(
    refusing: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainforge.cli._serving import delivering

    monkeypatch.setenv("HOOK_SECRET", SECRET)
    _announce(refusing, 2)
    store = home_store()
    with delivering(store) as thread:
        while len(refusing.accepted()) < 1:
            assert thread.is_alive()
            time.sleep(0.05)
    assert not thread.is_alive(), "the loop stops with the server"
    assert [d.state for d in store.list_event_deliveries().items] == [
        DeliveryState.DELIVERED, DeliveryState.DEAD]
