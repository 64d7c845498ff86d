"""The serve app's OpenAPI document: `/predict` described from the production version's input
contract, `/metrics` as Prometheus text, every response documented; then schemathesis over a
live server (50 generated requests per operation, and 50 that break the /predict schema,
derandomized): no 5xx, every answer's status, media type and body as documented, and every
request the schema allows answered 200."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

# Not negative_data_rejection: a value outside the contract's range or enum is scored and
# flagged, not refused (the document says so per field).
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, positive_data_acceptance]
ROUTES = {"/predict": "post", "/health": "get", "/metadata": "get", "/metrics": "get"}


@pytest.fixture(scope="module")
def document(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


def test_every_route_is_documented_with_each_response_described(document):
    assert {path: list(item) for path, item in document["paths"].items()} == {
        path: [method] for path, method in ROUTES.items()}
    for path, method in ROUTES.items():
        for status, response in document["paths"][path][method]["responses"].items():
            assert response["description"], (path, status)
            assert response["content"], (path, status)
    predict = document["paths"]["/predict"]["post"]["responses"]
    assert set(predict) == {"200", "400", "413", "415", "422", "500", "503"}
    error = predict["422"]["content"]["application/json"]["schema"]
    assert set(error["properties"]["detail"]["items"]["required"]) == {"record", "field",
                                                                       "error"}
    assert set(document["paths"]["/health"]["get"]["responses"]) == {"200", "503"}


def test_metrics_are_documented_as_prometheus_text(document, client):
    answer = document["paths"]["/metrics"]["get"]["responses"]["200"]
    assert list(answer["content"]) == ["text/plain"]
    assert "Prometheus" in answer["description"]
    assert client.get("/metrics").headers["content-type"].startswith("text/plain")


def test_the_predict_request_is_the_production_contract(document, served):
    body = document["paths"]["/predict"]["post"]["requestBody"]
    assert body["required"] is True and list(body["content"]) == ["application/json"]
    records = body["content"]["application/json"]["schema"]
    assert records["type"] == "array" and records["minItems"] == 1
    record = records["items"]
    rules = served.checker.rules
    assert set(record["properties"]) == set(rules)
    assert record["required"] == list(served.encoder.inputs)
    assert record["additionalProperties"] is served.checker.allow_extra
    json_types = {"int": "integer", "float": "number", "string": "string", "bool": "boolean",
                  "datetime": "string"}
    for name, rule in rules.items():
        field = record["properties"][name]
        expected = json_types[rule.type]
        assert field["type"] == ([expected, "null"] if rule.nullable else expected), name
        if rule.min is not None:
            assert field["minimum"] == rule.min, name
        if rule.max is not None:
            assert field["maximum"] == rule.max, name
        if rule.allowed is not None:
            assert field["enum"] == [*rule.allowed, *([None] if rule.nullable else [])], name
    assert record["properties"]["ts"]["format"] == "date-time"


def test_a_number_without_contract_bounds_is_documented_with_the_encoders_limits(document,
                                                                                 served):
    record = document["paths"]["/predict"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]["items"]
    unbounded = [name for name in served.encoder.limits
                 if served.checker.rules[name].min is None]
    assert unbounded, "the fraud contract bounds every numeric input"
    for name in unbounded:
        low, high = served.encoder.limits[name]
        assert record["properties"][name]["minimum"] == low
        assert repr(high) in record["properties"][name]["description"]


def test_the_predict_answer_schema_fits_the_task(document, served):
    answer = document["paths"]["/predict"]["post"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    prediction = answer["properties"]["predictions"]["items"]
    assert served.task == "binary"
    assert prediction["required"] == ["prediction", "probability", "flags"]
    assert prediction["properties"]["prediction"]["enum"] == list(served.classes or (0, 1))


def test_schemathesis_finds_no_server_error_and_no_undocumented_answer(client):
    schema = schemathesis.openapi.from_url(f"{client.base_url}/openapi.json")
    strategies = [schema[path][method.upper()].as_strategy() for path, method in ROUTES.items()]
    strategies.append(schema["/predict"]["POST"].as_strategy(
        generation_mode=schemathesis.GenerationMode.NEGATIVE))
    for strategy in strategies:
        @given(case=strategy)
        @settings(max_examples=50, derandomize=True, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case: schemathesis.Case) -> None:
            case.call_and_validate(base_url=str(client.base_url), checks=CHECKS)

        run()
