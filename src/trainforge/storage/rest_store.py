"""`RestStore`: the `Store` of a machine that reaches the database only through
`trainforge server` (`TRAINFORGE_DB=http(s)://host:port` and an editor's API token).

Each method is one request of the wire protocol (`storage.wire`), so each keeps the contract's
rules as the server's store keeps them, unit of work included; the contract suite runs on it.

Rules:
- the token comes from the URL's password (`http://:TOKEN@host:port`, what `Settings` makes
  of `TRAINFORGE_TOKEN`); it is sent as `Authorization: Bearer`, and the URL is shown with
  it masked everywhere;
- a request that could not be sent (connection refused: the server is restarting) is tried
  again for `connect_retry_s`; then, as for any request whose answer was lost (a read
  timeout, a connection dropped mid-answer) or a 502/503/504, `StoreUnavailable`: the
  tracking client spills what it could not write and replays it later (metric batches by
  id, so a batch the server stored before its answer was lost is not stored twice);
- 401 and 403 are `StoreError` saying what the token lacks; the store's own errors come
  back as the classes it raised (`wire.decode_error`);
- safe to share between threads (one connection pool); it pickles by URL.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from trainforge.errors import StoreError, StoreUnavailable
from trainforge.storage.db import shown_url
from trainforge.storage.http_client import (
    CONNECT_RETRY_S,
    UNAVAILABLE,
    send_retrying,
    server_address,
    server_client,
)
from trainforge.storage.wire import WIRE_METHODS, codec, decode_error

STORE_PATH = "/api/v1/store/"


class RestStore:
    """The store behind `trainforge server` at `url`; a method per entry of `WIRE_METHODS`
    (added below), each `Store`'s. `create` is accepted as `open_store` passes it: the
    server's database exists already."""

    def __init__(self, url: str, create: bool = True, *,
                 connect_retry_s: float = CONNECT_RETRY_S) -> None:
        self._url = url
        self._base, self._token = server_address(url)
        self._connect_retry_s = connect_retry_s
        self._client = server_client(self._base, self._token)

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        method = codec(name)
        answer = self._post(STORE_PATH + name, method.encode_call(args, kwargs))
        if answer.status_code == 200:
            return method.decode_result(answer.content)
        raise self._error(name, answer)

    def _post(self, path: str, body: bytes) -> httpx.Response:
        try:
            return send_retrying(lambda: self._client.post(
                path, content=body, headers={"Content-Type": "application/json"}),
                self._connect_retry_s)
        except httpx.ConnectError as exc:
            raise StoreUnavailable(f"cannot reach the server at {self}: {exc}") from exc
        except httpx.TransportError as exc:  # sent, but the answer was lost
            raise StoreUnavailable(f"the server at {self} did not answer: "
                                   f"{type(exc).__name__}: {exc}") from exc

    def _error(self, name: str, answer: httpx.Response) -> Exception:
        try:
            body = answer.json()
        except json.JSONDecodeError:
            body = None
        found = decode_error(body)
        if found is not None:
            return found
        detail = body.get("detail") if isinstance(body, dict) else answer.text[:200]
        if answer.status_code in UNAVAILABLE:
            return StoreUnavailable(f"the server at {self} is unavailable "
                                    f"({answer.status_code}): {detail}")
        if answer.status_code in (401, 403):
            return StoreError(f"the server at {self} refused {name} ({answer.status_code}): "
                              f"{detail}; TRAINFORGE_TOKEN must be an editor's API token "
                              "(trainforge tokens create USER)")
        return StoreError(f"the server at {self} answered {name} with "
                          f"{answer.status_code}: {detail}")

    def close(self) -> None:
        """Close the connections; a later call opens new ones."""
        self._client.close()
        self._client = server_client(self._base, self._token)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[str]]:
        return type(self), (self._url,)

    def __str__(self) -> str:
        return shown_url(self._base)

    def __repr__(self) -> str:
        return f"RestStore({shown_url(self._url)!r})"


def _store_method(name: str) -> Callable[..., Any]:
    def call(self: RestStore, *args: Any, **kwargs: Any) -> Any:
        return self.call(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"`Store.{name}` through the server (see `trainforge.storage.contracts`)."
    return call


for _name in WIRE_METHODS:
    setattr(RestStore, _name, _store_method(_name))
