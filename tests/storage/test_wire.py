"""The store's wire protocol (`storage.wire`) and its client (`RestStore`): every store method
travels but the users and tokens; values keep what JSON alone would lose; the store's errors
come back as the classes it raised; a bad call, a weak token and a down server each get an
answer that says what went wrong. (The contract suite runs every method on `RestStore`.)"""

from __future__ import annotations

import inspect
import math
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from live_server import RestServer, free_port

from trainforge import errors
from trainforge.entities import MetricPoint, Role, StepState
from trainforge.server import issue_token
from trainforge.storage import open_store
from trainforge.storage.contracts import AuthStore, Store
from trainforge.storage.rest_store import RestStore
from trainforge.storage.wire import WIRE_METHODS, codec, decode_error, encode_error


def _methods(protocol: type) -> set[str]:
    return {name for name, member in inspect.getmembers(protocol, inspect.isfunction)
            if not name.startswith("_")}


def test_every_store_method_travels_except_users_tokens_and_close() -> None:
    assert set(WIRE_METHODS) == _methods(Store) - _methods(AuthStore) - {"close"}
    assert not set(WIRE_METHODS) & _methods(AuthStore)


def test_every_method_has_a_codec_and_a_client_method() -> None:
    for name in WIRE_METHODS:
        assert codec(name).name == name
        assert callable(getattr(RestStore, name))


def test_webhooks_need_an_admin_and_tracking_an_editor() -> None:
    assert WIRE_METHODS["add_webhook"] is Role.ADMIN
    assert WIRE_METHODS["claim_delivery"] is Role.ADMIN
    assert WIRE_METHODS["log_metrics"] is Role.EDITOR
    assert WIRE_METHODS["create_model_version"] is Role.EDITOR


def test_nan_infinities_bytes_and_zoned_datetimes_survive_a_call() -> None:
    points = [MetricPoint("loss", math.nan, 1, 1.5), MetricPoint("loss", math.inf, 2, 2.5),
              MetricPoint("loss", -math.inf, 3, 3.5)]
    sent = codec("log_metrics").decode_call(
        codec("log_metrics").encode_call(("run", points), {"batch_id": "b1"}))
    got = sent["points"]
    assert [p.step for p in got] == [1, 2, 3] and sent["batch_id"] == "b1"
    assert math.isnan(got[0].value) and got[1].value == math.inf and got[2].value == -math.inf
    assert isinstance(got[0], MetricPoint)

    profile = bytes(range(256))
    sent = codec("put_data_profile").decode_call(
        codec("put_data_profile").encode_call(("key", "csv", 3, profile), {}))
    assert sent["profile"] == profile

    at = datetime(2026, 12, 7, 5, 30, tzinfo=timezone(timedelta(hours=2)))
    sent = codec("add_step_run").decode_call(
        codec("add_step_run").encode_call(("p", "train", 1, StepState.RUNNING, at), {}))
    assert sent["started_at"] == at and sent["started_at"].utcoffset() == timedelta(hours=2)
    assert sent["state"] is StepState.RUNNING


def test_a_result_comes_back_as_the_stores_own_record() -> None:
    result = {"a": b"\x00\xff", "b": b""}
    method = codec("get_data_profiles")
    assert method.decode_result(method.encode_result(result)) == result


def test_a_call_with_arguments_the_method_does_not_take_fails_on_the_client() -> None:
    with pytest.raises(TypeError):
        codec("get_run").encode_call(("a", "b"), {})
    with pytest.raises(TypeError):
        codec("get_run").encode_call((), {"run": "a"})


@pytest.mark.parametrize("body, named", [
    (b"{}", "run_id: Field required"),
    (b'{"run_id": "a", "extra": 1}', "extra: Extra inputs are not permitted"),
    (b'{"run_id": ["a"]}', "run_id: Input should be a valid string"),
    (b"not json", "body"),
])
def test_a_bad_body_names_the_method_and_the_argument(body: bytes, named: str) -> None:
    with pytest.raises(ValueError) as caught:
        codec("get_run").decode_call(body)
    assert str(caught.value).startswith("store method get_run: ") and named in str(caught.value)


def test_the_stores_errors_come_back_as_the_classes_it_raised() -> None:
    raised = [errors.Ambiguous("2 runs match 'ab'", ["ab1", "ab2"]),
              errors.QueryError("metrics.loss <", 14, "expected a value"),
              errors.NotFound("no run 'x'"), errors.Conflict("taken"),
              ValueError("max_points must be at least 2")]
    for exc in raised:
        status, body = encode_error(exc)  # type: ignore[misc]
        back = decode_error(httpx.Response(status, content=body).json())
        assert type(back) is type(exc) and str(back) == str(exc)
        assert vars(back) == vars(exc)
    assert encode_error(errors.NotFound("x"))[0] == 404  # type: ignore[index]
    assert encode_error(errors.QueryError("q", 0, "m"))[0] == 400  # type: ignore[index]


def test_an_unexpected_error_is_not_carried_and_an_unknown_body_is_no_error() -> None:
    assert encode_error(RuntimeError("a bug")) is None
    assert encode_error(KeyError("k")) is None
    assert decode_error({"detail": "x", "error": "SystemExit", "fields": {}}) is None
    assert decode_error({"detail": "x", "error": "os", "fields": {}}) is None
    assert decode_error({"detail": "Not authenticated"}) is None
    assert decode_error(["detail"]) is None


def test_a_bad_body_sent_to_the_server_is_answered_400_naming_the_argument(
        rest_server: RestServer, sqlite_url: str) -> None:
    behind = open_store(sqlite_url)
    rest_server.serve(store=behind)
    store = RestStore(rest_server.url)
    try:
        answer = store._client.post("/api/v1/store/get_run", content=b'{"run": "a"}',
                                    headers={"Content-Type": "application/json"})
        assert answer.status_code == 400
        assert answer.json()["error"] == "ValueError"
        assert "run_id: Field required" in answer.json()["detail"]
        with pytest.raises(errors.NotFound, match="nope"):
            store.get_run("nope")
    finally:
        store.close()
        behind.close()


def test_a_viewers_token_is_refused_with_what_it_lacks(rest_server: RestServer,
                                                       sqlite_url: str) -> None:
    behind = open_store(sqlite_url)
    rest_server.serve(store=behind)
    viewer = f"viewer-{uuid.uuid4().hex[:8]}"
    rest_server.users.add_user(viewer, Role.VIEWER)
    token, _ = issue_token(rest_server.users, viewer)
    url = rest_server.url.replace(rest_server.url.split("@")[0], f"http://:{token}")
    store = open_store(url)
    try:
        with pytest.raises(errors.StoreError, match="403") as caught:
            store.list_experiments()
        assert "editor's API token" in str(caught.value) and token not in str(caught.value)
        assert not isinstance(caught.value, errors.StoreUnavailable)
    finally:
        store.close()
        behind.close()


def test_a_missing_token_is_refused_401(rest_server: RestServer) -> None:
    store = open_store("http://" + rest_server.url.split("@")[1])
    with pytest.raises(errors.StoreError, match="401"):
        store.list_experiments()


def test_a_server_that_is_down_makes_the_store_unavailable() -> None:
    store = RestStore(f"http://:token@127.0.0.1:{free_port()}", connect_retry_s=0.3)
    with pytest.raises(errors.StoreUnavailable, match="cannot reach the server") as caught:
        store.get_run("a")
    assert "token" not in str(caught.value)


def test_the_client_never_shows_its_token() -> None:
    store = RestStore("http://:s3cr3t@127.0.0.1:1")
    assert "s3cr3t" not in repr(store) + str(store)
