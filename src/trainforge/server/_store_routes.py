"""The store's wire protocol on the server: `POST /api/v1/store/<method>` for each method of
`storage.wire.WIRE_METHODS`, each behind the role the table gives it, calling the server's own
store (what `RestStore` on a training machine sends).

These routes are trainforge's own client protocol, versioned with trainforge, and left out of
the OpenAPI document: they answer the store's records (the system namespace and environment
included, which the API's schemas never serve), so they need an editor's token. Bodies may be
up to `MAX_STORE_BODY_BYTES` (a metric batch of 50,000 points is about 4 MB).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

from fastapi import Depends, FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool

from trainforge.entities import Role
from trainforge.server._auth import ADMIN, EDITOR, Allow
from trainforge.storage import Store
from trainforge.storage.wire import WIRE_METHODS, codec, encode_error

log = logging.getLogger("trainforge")
STORE_PREFIX = "/api/v1/store/"
STORE_PATH = re.compile(re.escape(STORE_PREFIX) + r"[a-z_]+")
MAX_STORE_BODY_BYTES = 64 * 1024**2
_DECISIONS: dict[Role, Allow] = {Role.EDITOR: EDITOR, Role.ADMIN: ADMIN}


def add_store_routes(app: FastAPI) -> None:
    """A route per store method that travels, with its role's decision."""
    for name, role in WIRE_METHODS.items():
        app.add_api_route(STORE_PREFIX + name, _endpoint(name), methods=["POST"],
                          dependencies=[Depends(_DECISIONS[role])], include_in_schema=False)


def _endpoint(name: str) -> Callable[[Request], Awaitable[Response]]:
    async def call(request: Request) -> Response:
        body = await request.body()
        store: Store = request.app.state.session.store
        return await run_in_threadpool(_answer, store, name, body)

    call.__name__ = f"store_{name}"
    return call


def _answer(store: Store, name: str, body: bytes) -> Response:
    method = codec(name)
    try:
        result = getattr(store, name)(**method.decode_call(body))
        return Response(method.encode_result(result), media_type="application/json")
    except Exception as exc:
        encoded = encode_error(exc)
        if encoded is None:
            raise
        status, error = encoded
        return Response(error, status, media_type="application/json")
