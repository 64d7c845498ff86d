"""A webhook receiver on loopback: a real HTTP server in a thread that checks signatures."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trainforge.events import SIGNATURE_HEADER

SECRET = "planted-webhook-secret-z7"


class Receiver(ThreadingHTTPServer):
    """Answers each POST with the next status of `statuses` (the last one repeats) after
    checking the signature; keeps every body and whether its signature was right."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.received: list[tuple[dict[str, Any], bool, dict[str, str]]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        signed = hmac.compare_digest(self.headers.get(SIGNATURE_HEADER, ""), expected)
        self.server.received.append((json.loads(body), signed, dict(self.headers)))
        position = min(len(self.server.received), len(self.server.statuses)) - 1
        self.send_response(self.server.statuses[position] if signed else 401)
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


