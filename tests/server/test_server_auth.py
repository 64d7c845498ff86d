"""`trainforge server` fails closed: every route's permission is decided (and an app with an
undecided route is not built), checked before any lookup, with tokens that expire, can be
revoked and act at most with their user's current role; failed attempts are rate-limited and
bodies must be JSON of a bounded, declared length. Served by uvicorn on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI
from fastapi.routing import APIRoute
from live_server import live_server

from trainforge.config import Settings
from trainforge.entities import ModelStage, Role
from trainforge.server import create_server_app, issue_token
from trainforge.server._auth import (
    MAX_FAILURES,
    Allow,
    FailedAttempts,
    check_every_route_decided,
    route_decision,
)
from trainforge.session import Session
from trainforge.storage import Store


@dataclass
class Server:
    app: FastAPI
    client: httpx.Client
    store: Store
    tokens: dict[Role, str]

    def as_role(self, role: Role) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("server-home")
    session = Session.open(Settings.from_env({"TRAINFORGE_HOME": str(home)}))
    store = session.store
    tokens = {}
    for role in Role:
        store.add_user(role.value, role)
        tokens[role] = issue_token(store, role.value)[0]
    app = create_server_app(session)
    with live_server(app) as client:
        yield Server(app, client, store, tokens)


@pytest.fixture(autouse=True)
def _no_failures_yet(server: Server) -> None:
    """Every request of these tests comes from 127.0.0.1: each test starts with its address's
    failed attempts forgotten."""
    server.app.state.failed_attempts = FailedAttempts()


def _request_of(route: APIRoute) -> tuple[str, str, dict[str, Any]]:
    """A request of the route: its method, a path with every parameter filled, and a body of
    the media type it takes."""
    path = route.path.replace("{delivery_id}", "1")
    for name in ("experiment_id", "run_id", "name", "version", "key:path", "name:path", "ref",
                 "prefix:path", "pipeline_run_id", "pipeline_id"):
        path = path.replace("{" + name + "}", "nothing")
    method = sorted(route.methods)[0]
    body: dict[str, Any] = {}
    if ("/artifacts/" in path or "/objects/" in path) and method == "PUT":
        body = {"content": b"bytes", "headers": {"Content-Type": "application/octet-stream"}}
    elif method in ("PUT", "POST"):
        body = {"json": {"stage": "archived"}}
    return method, path, body


def _with_headers(body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    return {**body, "headers": {**body.get("headers", {}), **headers}}


def test_every_route_answers_401_without_a_token_403_below_its_role_and_serves_its_role(
        server: Server) -> None:
    checked = []
    for route in server.app.routes:
        assert isinstance(route, APIRoute)
        decision = route_decision(route)
        method, path, body = _request_of(route)
        if not isinstance(decision, Allow):
            assert path == "/health" and server.client.get(path).status_code == 200
            continue
        server.app.state.failed_attempts = FailedAttempts()  # each route's 401 counts
        anonymous = server.client.request(method, path, **body)
        assert anonymous.status_code == 401, path
        assert anonymous.headers["www-authenticate"] == "Bearer"
        for role in Role:
            answer = server.client.request(method, path,
                                           **_with_headers(body, server.as_role(role)))
            if role.allows(decision.role):
                assert answer.status_code not in (401, 403), (path, role, answer.text)
            else:
                assert answer.status_code == 403, (path, role)
                assert decision.role.value in answer.json()["detail"]
        checked.append(f"{method} {path}")
    assert "PUT /api/v1/models/nothing/versions/nothing/stage" in checked
    assert "GET /openapi.json" in checked and "POST /api/v1/runs/nothing/metrics" in checked
    assert "PUT /api/v1/runs/nothing/artifacts/nothing" in checked and len(checked) >= 19
    assert "POST /api/v1/store/log_metrics" in checked  # the store's wire protocol
    assert "POST /api/v1/webhooks/deliveries/1/redeliver" in checked
    assert "GET /api/v1/pipeline-runs/nothing" in checked
    assert "GET /api/v1/pipelines/nothing" in checked
    assert "GET /api/v1/data/versions/nothing/drift" in checked
    assert "POST /api/v1/store/add_webhook" in checked and "PUT /api/v1/objects/nothing" in checked


def test_an_app_with_a_route_that_decides_nothing_is_refused(server: Server) -> None:
    app = create_server_app(server.app.state.session)  # another app: its routes are its own
    app.get("/api/v1/forgotten")(lambda: {"open": True})

    with pytest.raises(RuntimeError, match=r"\['GET'\] /api/v1/forgotten"):
        check_every_route_decided(app)


def test_an_included_router_is_refused_even_when_its_routes_decide(server: Server) -> None:
    app = create_server_app(server.app.state.session)
    router = APIRouter()
    router.get("/api/v1/more", dependencies=[Depends(Allow(Role.VIEWER))])(lambda: {})
    app.include_router(router)  # its routes are not the app's to inspect

    with pytest.raises(RuntimeError, match="not an API route"):
        check_every_route_decided(app)


def test_permission_is_decided_before_anything_is_looked_up(server: Server) -> None:
    path = "/api/v1/models/no-such-model/versions/1/stage"
    as_viewer = server.client.put(path, json={"stage": "production"},
                                  headers=server.as_role(Role.VIEWER))
    as_editor = server.client.put(path, json={"stage": "production"},
                                  headers=server.as_role(Role.EDITOR))

    assert as_viewer.status_code == 403
    assert as_editor.status_code == 404 and "no-such-model" in as_editor.json()["detail"]


def test_a_token_stops_working_when_expired_revoked_or_wrong(server: Server) -> None:
    store = server.store
    store.add_user("temp", Role.EDITOR)
    past = datetime.now(timezone.utc) - timedelta(days=2)
    expired, _ = issue_token(store, "temp", expires_in=timedelta(days=1), now=past)
    revoked, record = issue_token(store, "temp")
    store.revoke_token(record.token_id, datetime.now(timezone.utc))
    good, _ = issue_token(store, "temp")
    wrong = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")

    def status(token: str) -> int:
        return server.client.get("/api/v1/whoami",
                                 headers={"Authorization": f"Bearer {token}"}).status_code

    assert [status(t) for t in (expired, revoked, wrong, "tf_short", good)] == [
        401, 401, 401, 401, 200]
    assert server.client.get("/api/v1/whoami", headers={"Authorization": good}).status_code \
        == 401  # no scheme


def test_a_token_acts_at_most_with_its_users_role_now(server: Server) -> None:
    store = server.store
    store.add_user("demoted", Role.EDITOR)
    token, _ = issue_token(store, "demoted")
    headers = {"Authorization": f"Bearer {token}"}
    assert server.client.get("/api/v1/whoami", headers=headers).json()["role"] == "editor"

    store.set_user_role("demoted", Role.VIEWER)

    assert server.client.get("/api/v1/whoami", headers=headers).json()["role"] == "viewer"
    assert server.client.put("/api/v1/models/m/versions/1/stage", json={"stage": "archived"},
                             headers=headers).status_code == 403
    with pytest.raises(ValueError, match="user 'demoted' is viewer: a token of theirs cannot "
                                         "be editor"):
        issue_token(store, "demoted", Role.EDITOR)


def test_failed_attempts_from_one_address_are_answered_429_for_a_while(server: Server) -> None:
    bad = {"Authorization": "Bearer tf_000000000000_" + "x" * 43}
    answers = [server.client.get("/api/v1/whoami", headers=bad).status_code
               for _ in range(MAX_FAILURES)]
    blocked = server.client.get("/api/v1/whoami", headers=server.as_role(Role.ADMIN))

    assert answers == [401] * MAX_FAILURES
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
    assert server.client.get("/health").status_code == 200


@pytest.mark.parametrize(("headers", "content", "status"), [
    ({"Content-Type": "text/plain"}, b'{"stage": "archived"}', 415),
    ({"Content-Type": "application/json"}, b"[" * (1024 * 1024 + 1), 413),
])
def test_a_body_must_be_json_of_bounded_length(server: Server, headers: dict[str, str],
                                               content: bytes, status: int) -> None:
    answer = server.client.put("/api/v1/models/m/versions/1/stage", content=content,
                               headers={**headers, **server.as_role(Role.EDITOR)})
    assert answer.status_code == status


def test_a_body_without_its_length_is_refused(server: Server) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"stage": "archived"}'

    answer = server.client.put("/api/v1/models/m/versions/1/stage", content=chunks(),
                               headers={"Content-Type": "application/json",
                                        **server.as_role(Role.EDITOR)})
    assert answer.status_code == 411


def test_a_stage_change_is_recorded_under_the_tokens_user(server: Server) -> None:
    store = server.store
    experiment = store.get_or_create_experiment("served").experiment_id
    run = store.create_run(experiment, {}, {}, "unused")
    version = store.create_model_version("served-model", run.run_id, "unused",
                                         ModelStage.STAGING, {"test_roc_auc": 0.9})

    answer = server.client.put(f"/api/v1/models/served-model/versions/{version.version}/stage",
                               json={"stage": "archived", "reason": "retired by a test"},
                               headers=server.as_role(Role.EDITOR))

    assert answer.status_code == 200, answer.text
    assert answer.json()["to_stage"] == "archived" and answer.json()["user"] == "editor"
    [*_, last] = store.list_stage_changes("served-model").items
    assert (last.user, last.reason) == ("editor", "retired by a test")
