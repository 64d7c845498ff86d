"""The team server's app (FastAPI): the REST API over a `Session`'s store, behind tokens.

Rules:
- Every route has a permission decision (`_auth`); the app is not built otherwise. `/health`
  is the one route without a token; `/openapi.json` needs a viewer's (there is no `/docs`
  page: FastAPI's loads its scripts from a CDN, and the server works offline).
- A request with a body must give its `Content-Length` (411: no chunked bodies), say
  `Content-Type: application/json` (415 otherwise: a cross-origin `text/plain` form post is
  refused) and hold at most `MAX_BODY_BYTES` (413); an artifact upload says
  `application/octet-stream` and holds at most `MAX_ARTIFACT_BYTES` (an object of the
  artifact proxy, `_object_routes`, `MAX_OBJECT_BYTES`), a call of the store's wire protocol
  (`_store_routes`) at most `MAX_STORE_BODY_BYTES`. These are answered
  before the token is looked at.
- Errors are JSON `{"detail": ...}`: a missing record 404, a colliding write 409, a bad query,
  cursor or limit 400, a refused promotion 422 with the gate report (`{"detail": message,
  "gate_report": [...]}`), a move the stages do not allow 422. Anything else is 500 and
  logged, never shown.
- Every answer says how long the server took to make it (`Server-Timing: app;dur=MS`, from
  the request's arrival to its answer's headers): browsers show it beside the network time,
  and `benchmarks/server.py` reads it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response

from trainforge.errors import Conflict, GatesFailed, NotFound, PromotionError, QueryError
from trainforge.server._auth import PUBLIC, VIEWER, check_every_route_decided, install_auth
from trainforge.server._object_routes import MAX_OBJECT_BYTES, OBJECT_PATH, add_object_routes
from trainforge.server._routes import MAX_ARTIFACT_BYTES, UPLOAD_PATH, add_api_routes
from trainforge.server._schemas import Health
from trainforge.server._store_routes import MAX_STORE_BODY_BYTES, STORE_PATH, add_store_routes
from trainforge.session import Session

MAX_BODY_BYTES = 1024 * 1024


def create_server_app(session: Session) -> FastAPI:
    """The server's app over `session` (its store holds the users and tokens)."""
    app = FastAPI(title="trainforge", version="1", openapi_url=None, docs_url=None,
                  redoc_url=None)
    app.state.session = session
    install_auth(app, session.store)

    @app.get("/health", dependencies=[Depends(PUBLIC)])
    def health() -> Health:
        return Health(status="ok")

    @app.get("/openapi.json", dependencies=[Depends(VIEWER)], include_in_schema=False)
    def openapi() -> dict[str, Any]:
        return get_openapi(title=app.title, version=app.version, routes=app.routes)

    add_api_routes(app)
    add_store_routes(app)
    add_object_routes(app)
    app.middleware("http")(_bodies_as_declared)
    app.middleware("http")(_timed)  # the outermost: it times the refusals too
    _answer_errors(app)
    check_every_route_decided(app)
    return app


def app_from_environment() -> FastAPI:
    """The app over a session of the environment's settings: what each process of
    `trainforge server --workers N` builds."""
    return create_server_app(Session.open())


async def _timed(request: Request,
                 call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    started = time.perf_counter()
    response = await call_next(request)
    response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
    return response


async def _bodies_as_declared(request: Request,
                              call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    length = request.headers.get("content-length")
    if "transfer-encoding" in request.headers or (length is not None and not length.isdigit()):
        return JSONResponse({"detail": "a body needs its Content-Length"}, 411)
    if length is not None and int(length) > 0:
        path = request.url.path
        if request.method == "PUT" and UPLOAD_PATH.fullmatch(path):
            expected, limit = "application/octet-stream", MAX_ARTIFACT_BYTES
        elif request.method == "PUT" and OBJECT_PATH.fullmatch(path):
            expected, limit = "application/octet-stream", MAX_OBJECT_BYTES
        else:
            expected = "application/json"
            limit = MAX_STORE_BODY_BYTES if STORE_PATH.fullmatch(path) else MAX_BODY_BYTES
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != expected:
            return JSONResponse({"detail": f"the body must be {expected}"}, 415)
        if int(length) > limit:
            return JSONResponse({"detail": f"the body is over {limit} bytes"}, 413)
    return await call_next(request)


def _answer_errors(app: FastAPI) -> None:
    def answer(status: int) -> Callable[[Request, Exception], Response]:
        def handle(request: Request, exc: Exception) -> Response:
            return JSONResponse({"detail": str(exc)}, status)
        return handle

    def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, GatesFailed)
        return JSONResponse({"detail": str(exc), "gate_report": exc.report}, 422)

    app.add_exception_handler(NotFound, answer(404))
    app.add_exception_handler(Conflict, answer(409))
    app.add_exception_handler(QueryError, answer(400))
    app.add_exception_handler(ValueError, answer(400))
    app.add_exception_handler(GatesFailed, refused)
    app.add_exception_handler(PromotionError, answer(422))
