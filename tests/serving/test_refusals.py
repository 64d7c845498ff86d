"""The serve app's error contract over a live server: each bad request gets its 4xx naming the
record (its index in the list), the field and the bound or type expected, with no numpy warning
(an error here, in the server's thread too) and nothing logged, and the next good request is
answered."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

import httpx
import pytest
from live_server import live_server, records_of
from trained_fraud import TrainedFraud

from trainforge.serving import ServedVersion, VersionRouter, create_app, load_served_version

pytestmark = pytest.mark.filterwarnings("error")
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def good(trained: TrainedFraud) -> dict[str, Any]:
    return records_of(trained.golden().head(1))[0]


def refused(client: httpx.Client, good: dict[str, Any], caplog: pytest.LogCaptureFixture,
            status: int, **request: Any) -> dict[str, Any]:
    """The one problem of a refused request; asserts the status, that nothing was logged while
    it was answered (a warning or worse: an earlier test of the process may have left
    trainforge's logger at INFO, and the app's start logs the version it serves) and that a
    good request is answered after it."""
    server_log = logging.getLogger("uvicorn")  # uvicorn's loggers do not propagate
    server_log.addHandler(caplog.handler)
    caplog.clear()
    try:
        with caplog.at_level(logging.WARNING):
            response = client.post("/predict", **request)
    finally:
        server_log.removeHandler(caplog.handler)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert caplog.records == []
    assert client.post("/predict", json=[good]).status_code == 200
    detail = response.json()["detail"]
    assert len(detail) == 1, detail
    return dict(detail[0])


def _bounds_text(served: ServedVersion, field: str) -> str:
    low, high = served.encoder.limits[field]
    return f"expected a number from {low!r} to {high!r}"


@pytest.mark.parametrize(("field", "value"), [
    ("amount", 10**400),            # an integer too large for a float: was a 500 (OverflowError)
    ("amount", 1e308),              # was a numpy RuntimeWarning and a 422 without the bound
    ("amount", -1.79e308),          # was "no impute transform fills it"
    ("account_age_days", 10**400),  # an int column read as a number
    ("card_present", -(10**39)),    # a passthrough column
], ids=["amount 10**400", "amount 1e308", "amount -1.79e308", "account_age_days 10**400",
        "card_present -10**39"])
def test_a_number_beyond_the_encoders_limits_is_422_naming_the_record_field_and_bound(
        client, good, served, caplog, field, value):
    problem = refused(client, good, caplog, 422,
                      content=json.dumps([good, {**good, field: value}]), headers=JSON)
    assert (problem["record"], problem["field"]) == (1, field)
    assert _bounds_text(served, field) in problem["error"]
    assert "impute" not in problem["error"]


def test_the_bound_names_the_contracts_range_too(client, good, served, caplog):
    problem = refused(client, good, caplog, 422, json=[{**good, "amount": 1e308}])
    rule = served.checker.rules["amount"]
    assert rule.min is not None and rule.max is not None
    assert f"the input contract expects {rule.min:g} to {rule.max:g}" in problem["error"]


def test_a_value_at_the_encoders_limit_is_scored_and_flagged(client, good, served):
    low, high = served.encoder.limits["amount"]
    answer = client.post("/predict", json=[{**good, "amount": low}, {**good, "amount": high}])
    assert answer.status_code == 200, answer.text
    for prediction in answer.json()["predictions"]:
        assert 0.0 <= prediction["probability"] <= 1.0
        assert ("amount", "out_of_range") in {(f["field"], f["flag"]) for f in prediction["flags"]}


@pytest.mark.parametrize("media_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_not_sent_as_json_is_415(client, good, caplog, media_type):
    headers = {} if media_type is None else {"content-type": media_type}
    problem = refused(client, good, caplog, 415, content=json.dumps([good]), headers=headers)
    assert problem["record"] is None and problem["field"] is None
    assert problem["error"] == f"expected Content-Type application/json, got {media_type or 'none'}"


def test_json_with_a_charset_parameter_is_accepted(client, good):
    response = client.post("/predict", content=json.dumps([good]),
                           headers={"content-type": "application/json; charset=utf-8"})
    assert response.status_code == 200


@pytest.mark.parametrize(("body", "error"), [
    (b'[{"amount": 1.0,', "Expecting property name"),
    (b"[" * 100_000 + b"]" * 100_000, "maximum recursion depth"),
    (b'[{"amount": "\xff"}]', "invalid start byte"),
    (b"", "Expecting value"),
], ids=["truncated", "nested 100000 deep", "not utf-8", "empty body"])
def test_a_body_that_is_not_json_is_400(client, good, caplog, body, error):
    problem = refused(client, good, caplog, 400, content=body, headers=JSON)
    assert problem["record"] is None and problem["field"] is None
    assert problem["error"].startswith("body is not valid JSON") and error in problem["error"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_422_as_not_finite(client, good, caplog, literal):
    broken = json.dumps(good).replace(f'"amount": {json.dumps(good["amount"])}',
                                      f'"amount": {literal}')
    body = f"[{json.dumps(good)}, {broken}]"
    problem = refused(client, good, caplog, 422, content=body, headers=JSON)
    assert (problem["record"], problem["field"]) == (1, "amount")
    assert problem["error"].startswith("expected a finite number, got a number")


def _without(record: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != field}


BAD_RECORDS = {
    "missing field": (lambda r: [r, _without(r, "amount")], 1, "amount", "missing"),
    "text for an int": (lambda r: [{**r, "hour": "seven"}], 0, "hour", "expected an integer"),
    "float for an int": (lambda r: [{**r, "hour": 7.5}], 0, "hour", "expected an integer"),
    "bool for a float": (lambda r: [{**r, "amount": True}], 0, "amount",
                         "expected a finite number, got a boolean"),
    "number for text": (lambda r: [{**r, "country": 5}], 0, "country", "expected text"),
    "null in a non-nullable field": (lambda r: [{**r, "country": None}], 0, "country",
                                     "is null"),
    "list nested in a field": (lambda r: [{**r, "amount": [[[[1.0]]]] * 3}], 0, "amount",
                               "expected a finite number, got a list"),
    "deeply nested in a field": (lambda r: [{**r, "amount": json.loads("[" * 500 + "]" * 500)}],
                                 0, "amount", "expected a finite number, got a list"),
    "not a date-time": (lambda r: [{**r, "ts": "yesterday"}], 0, "ts", "expected an ISO 8601"),
    "empty batch": (lambda r: [], None, None, "expected at least one record, got an empty list"),
    "an object, not a list": (lambda r: r, None, None,
                              "expected a JSON list of records, got an object"),
    "a record that is a number": (lambda r: [r, 5], 1, None, "expected an object, got a number"),
    "a record that is a list": (lambda r: [r, [r]], 1, None, "expected an object, got a list"),
}


@pytest.mark.parametrize("case", BAD_RECORDS, ids=list(BAD_RECORDS))
def test_a_bad_record_is_422_naming_the_record_and_field(client, good, caplog, case):
    build, record, field, error = BAD_RECORDS[case]
    problem = refused(client, good, caplog, 422, json=build(good))
    assert (problem["record"], problem["field"]) == (record, field)
    assert problem["error"].startswith(error)


def test_an_extra_field_is_ignored_where_the_contract_allows_extra_columns(client, good, served):
    assert served.checker.allow_extra  # the fraud contract: allow_extra_columns: true
    plain = client.post("/predict", json=[good]).json()["predictions"]
    extra = client.post("/predict", content=json.dumps([{**good, "note": "hello", "\ud800": 1}]),
                        headers=JSON)  # a lone surrogate, as JSON may escape it
    assert extra.status_code == 200
    assert extra.json()["predictions"] == plain


def test_an_extra_field_is_422_where_the_contract_forbids_extra_columns(trained, good, caplog):
    def strict(version):  # type: ignore[no-untyped-def]
        served = load_served_version(trained.artifacts, version,
                                     trained.store.get_run(version.run_id))
        return replace(served, checker=replace(served.checker, allow_extra=False))

    router = VersionRouter(trained.store, "fraud_detector", strict)
    with live_server(create_app(router)) as client:
        body = json.dumps([good, {**good, "\ud800": 1}])  # a lone surrogate, as JSON escapes it
        problem = refused(client, good, caplog, 422, content=body, headers=JSON)
    assert problem == {"record": 1, "field": "\ud800", "error": "not in the input contract"}


def test_each_refusal_is_counted_by_status(client, good):
    client.post("/predict", content=b"[", headers=JSON)
    client.post("/predict", content=b"[]", headers={"content-type": "text/plain"})
    metrics = client.get("/metrics").text
    for status in ("400", "415"):
        assert f'status="{status}"' in metrics
