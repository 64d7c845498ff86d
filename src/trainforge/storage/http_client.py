"""What the clients of `trainforge server` share (`RestStore`, `HttpObjectStore`): the server's
address and token read from a URL, and requests that wait out a restarting server.

A URL names the server and, as its password, the API token: `http://:TOKEN@host:port/path`
(what `Settings` makes of `TRAINFORGE_TOKEN`). The token is sent as `Authorization: Bearer`
and never shown: `server_address` hands out the URL without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

import httpx

TIMEOUT = httpx.Timeout(60.0, connect=5.0)
CONNECT_RETRY_S = 10.0
UNAVAILABLE = (502, 503, 504)


def server_address(url: str) -> tuple[str, str | None]:
    """The URL without user, password, query or trailing '/', and the token its password
    holds (None: none)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    base = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return base, parts.password or None


def server_client(base: str, token: str | None) -> httpx.Client:
    """A client of the server at `base` that sends `token` (thread-safe, pooled)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT)


def send_retrying(send: Callable[[], httpx.Response], retry_s: float = CONNECT_RETRY_S, *,
                  idempotent: bool = False) -> httpx.Response:
    """`send()`, tried again for up to `retry_s` seconds while the connection is refused (the
    request never left: the server is restarting); then the `httpx.ConnectError`. For a
    request that may be sent twice harmlessly (`idempotent`: a whole object put, a get, a
    delete) a lost answer (any transport error) and a 502/503/504 are tried again too; for any
    other request only the caller knows whether sending it again is harmless, so those
    propagate at once."""
    deadline = time.monotonic() + retry_s
    pause = 0.05
    while True:
        retried = httpx.TransportError if idempotent else httpx.ConnectError
        try:
            answer = send()
        except retried:
            if time.monotonic() + pause > deadline:
                raise
        else:
            if not (idempotent and answer.status_code in UNAVAILABLE) \
                    or time.monotonic() + pause > deadline:
                return answer
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
