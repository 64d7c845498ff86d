"""A webhook receiver on loopback: a real HTTP server in a thread that checks signatures; and
what tests deliver with: a clock they move by hand, and `deliver_all`."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trainforge.entities import DeliveryState
from trainforge.events import SIGNATURE_HEADER, BackoffPolicy, Deliverer
from trainforge.storage import OutboxStore

SECRET = "planted-webhook-secret-z7"
# Tests move the clock by hand, so the waits cost no time: 1 s, 2 s, 4 s, ... given up after a
# minute (attempts at 0, 1, 3, 7, 15, 31 s: six).
FAST = BackoffPolicy(first_delay_s=1.0, max_delay_s=60.0, give_up_after_s=60.0, timeout_s=2.0,
                     lease_s=30.0, poll_s=0.05)


class Receiver(ThreadingHTTPServer):
    """Answers each POST with the next status of `statuses` (the last one repeats) after
    checking the signature; keeps every body and whether its signature was right, and the
    status it answered each with (`answered`)."""

    def __init__(self, statuses: list[int], listening: bool = True) -> None:
        self.statuses = statuses
        self.received: list[tuple[dict[str, Any], bool, dict[str, str]]] = []
        self.answered: list[int] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler, bind_and_activate=False)
        self.server_bind()
        if listening:
            self.server_activate()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"

    def accepted(self) -> list[dict[str, Any]]:
        """The bodies answered with a 2xx status, in the order they came."""
        return [body for (body, _, _), status in zip(self.received, self.answered, strict=True)
                if 200 <= status < 300]


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        signed = hmac.compare_digest(self.headers.get(SIGNATURE_HEADER, ""), expected)
        with self.server.lock:
            self.server.received.append((json.loads(body), signed, dict(self.headers)))
            position = min(len(self.server.received), len(self.server.statuses)) - 1
            status = self.server.statuses[position] if signed else 401
            self.server.answered.append(status)
        self.send_response(status)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(statuses: list[int]) -> Iterator[Receiver]:
    server = Receiver(statuses)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def come_up(server: Receiver) -> threading.Thread:
    """Start listening on the port a receiver made with `listening=False` holds (until now
    every connection to it was refused), and serve."""
    server.server_activate()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


class Clock:
    """The time a deliverer sees: the real time, or the time it was moved to (`advance_to`)
    when that is later."""

    def __init__(self) -> None:
        self.moved_to = datetime.now(timezone.utc)

    def __call__(self) -> datetime:
        return max(self.moved_to, datetime.now(timezone.utc))

    def advance_to(self, when: datetime) -> None:
        self.moved_to = max(self.moved_to, when)


def deliver_all(deliverer: Deliverer, clock: Clock, store: OutboxStore,
                passes: int = 50) -> int:
    """Passes of `deliverer`, the clock moved to the next attempt due after each, until no
    delivery is pending; how many passes that took."""
    for done in range(1, passes + 1):
        deliverer.run_once()
        pending = store.list_event_deliveries(DeliveryState.PENDING).items
        if not pending:
            return done
        clock.advance_to(min(d.next_attempt_at for d in pending) + timedelta(milliseconds=1))
    raise AssertionError(f"deliveries still pending after {passes} passes")
