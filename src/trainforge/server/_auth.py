"""Who may call which route of `trainforge server`: a decision on every route, checked first.

Rules:
- Every route declares its decision as a dependency: `Depends(Allow(Role.VIEWER))` (a token
  acting with that role or above) or `Depends(PUBLIC)` (no token: `/health` only). The app
  refuses to start with a route that declares none (`check_every_route_decided`), so a route
  added without a decision fails at once, and in CI, instead of being open.
- The decision runs before the route's handler, so permission is settled before anything is
  looked up: a viewer promoting a model that does not exist is answered 403, not 404.
- A request without a valid token is 401 (`WWW-Authenticate: Bearer`), whatever was wrong
  with it; the reason goes to the server's log only. A valid token whose role is below the
  route's is 403.
- Failed attempts are counted per client address: after `MAX_FAILURES` within
  `FAILURE_WINDOW_S` seconds, that address is answered 429 (with `Retry-After`) without its
  token being looked at, until the window has passed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone

from fastapi import FastAPI, HTTPException, Request
from fastapi.routing import APIRoute
from fastapi.security.utils import get_authorization_scheme_param

from trainforge.entities import Role
from trainforge.server._tokens import Caller, Unauthenticated, authenticate
from trainforge.storage import AuthStore

log = logging.getLogger("trainforge")
MAX_FAILURES = 10
FAILURE_WINDOW_S = 60.0


class FailedAttempts:
    """Failed token attempts per client address within a sliding window (thread-safe)."""

    def __init__(self, limit: int = MAX_FAILURES, window_s: float = FAILURE_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._limit, self._window, self._clock = limit, window_s, clock
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def blocked_for(self, client: str) -> float:
        """Seconds until `client` may try again (0: it may now)."""
        with self._lock:
            times = self._recent(client)
            if len(times) < self._limit:
                return 0.0
            return max(0.0, times[0] + self._window - self._clock())

    def record(self, client: str) -> None:
        with self._lock:
            self._recent(client).append(self._clock())

    def _recent(self, client: str) -> deque[float]:
        times = self._seen.setdefault(client, deque())
        while times and times[0] <= self._clock() - self._window:
            times.popleft()
        return times


class LastUsed:
    """Records when each token was last used, at most once per `every_s` seconds per token (a
    write per request would cost every read its own transaction)."""

    def __init__(self, every_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._every, self._clock = every_s, clock
        self._marked: dict[str, float] = {}
        self._lock = threading.Lock()

    def mark(self, store: AuthStore, token_id: str) -> None:
        now = self._clock()
        with self._lock:
            if now - self._marked.get(token_id, -self._every) < self._every:
                return
            self._marked[token_id] = now
        store.touch_token(token_id, datetime.now(timezone.utc))


class Allow:
    """The decision of a route open to tokens acting as `role` or above; as a dependency it
    returns the `Caller`."""

    def __init__(self, role: Role) -> None:
        self.role = role

    def __call__(self, request: Request) -> Caller:
        state = request.app.state
        client = request.client.host if request.client else "unknown"
        wait = state.failed_attempts.blocked_for(client)
        if wait > 0:
            raise HTTPException(429, "too many failed token attempts from this address",
                                headers={"Retry-After": str(int(wait) + 1)})
        scheme, token = get_authorization_scheme_param(request.headers.get("Authorization"))
        try:
            if scheme.lower() != "bearer" or not token:
                raise Unauthenticated("no bearer token")
            caller = authenticate(state.auth_store, token)
        except Unauthenticated as exc:
            state.failed_attempts.record(client)
            log.info("server: %s %s from %s refused: %s", request.method, request.url.path,
                     client, exc)
            raise HTTPException(401, "a valid API token is needed (Authorization: Bearer "
                                "<token>)", headers={"WWW-Authenticate": "Bearer"}) from None
        state.last_used.mark(state.auth_store, caller.token_id)
        if not caller.role.allows(self.role):
            raise HTTPException(403, f"this needs the {self.role.value} role; the token acts "
                                f"as {caller.role.value}")
        return caller


class Public:
    """The decision of a route open to anyone (`/health`)."""

    def __call__(self) -> None:
        return None


PUBLIC = Public()
VIEWER, EDITOR, ADMIN = Allow(Role.VIEWER), Allow(Role.EDITOR), Allow(Role.ADMIN)


def route_decision(route: APIRoute) -> Allow | Public | None:
    """The decision a route declared: its one `Allow` or `Public` dependency (None: none)."""
    found = [dependency.call for dependency in route.dependant.dependencies
             if isinstance(dependency.call, (Allow, Public))]
    return found[0] if len(found) == 1 else None


def check_every_route_decided(app: FastAPI) -> None:
    """`RuntimeError` naming each route of `app` that declares no decision (or more than
    one), or that is not an API route (a mounted app or a plain route, which could not)."""
    undecided = []
    for route in app.routes:
        if not isinstance(route, APIRoute):
            undecided.append(f"{getattr(route, 'path', route)!s} (not an API route)")
        elif route_decision(route) is None:
            undecided.append(f"{sorted(route.methods or ())} {route.path}")
    if undecided:
        raise RuntimeError("routes without a permission decision (Depends(Allow(role)) or "
                           f"Depends(PUBLIC)): {', '.join(undecided)}")


def install_auth(app: FastAPI, store: AuthStore) -> None:
    """What `Allow` reads on every request: the store of tokens, the failed attempts and when
    each token was last used."""
    app.state.auth_store = store
    app.state.failed_attempts = FailedAttempts()
    app.state.last_used = LastUsed()
