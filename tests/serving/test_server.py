"""`trainforge serve`'s app behind a real uvicorn server on loopback: good records answered as
the in-process model scores them, refused requests leave the server answering (each refusal:
test_refusals.py), profile flags, metrics, canary routing and stage changes without restart."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import numpy as np
import pandas as pd
import pytest
from live_server import CANARY_SHARE, live_server, records_of, router_of, wait_for
from trained_fraud import TrainedFraud

from trainforge.entities import ModelStage
from trainforge.serving import create_app
from trainforge.train import load_stored_model


@pytest.fixture(scope="module")
def client(trained: TrainedFraud) -> Iterator[httpx.Client]:
    with live_server(create_app(router_of(trained), poll_interval=0.2)) as client:
        yield client


@pytest.fixture(scope="module")
def golden(trained: TrainedFraud) -> pd.DataFrame:
    return trained.golden()


def production(client: httpx.Client) -> str:
    return str(client.get("/health").json()["versions"]["production"])


def test_good_records_get_the_in_process_models_probabilities(client, trained, golden):
    frame = golden.head(300)
    expected = load_stored_model(trained.artifacts, trained.run_id).predict_scores(frame)
    response = client.post("/predict", json=records_of(frame))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["version"] == production(client) and answer["role"] == "production"
    probabilities = np.array([p["probability"] for p in answer["predictions"]])
    np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-5)
    labels = [p["prediction"] for p in answer["predictions"]]
    assert labels == [int(p >= 0.5) for p in probabilities]
    assert client.get("/metadata").json()["production"]["runtime"] == "onnxruntime"


def test_the_torch_runtime_answers_exactly_as_the_in_process_model(trained, golden):
    frame = golden.tail(300)
    expected = load_stored_model(trained.artifacts, trained.run_id).predict_scores(frame)
    with live_server(create_app(router_of(trained, runtime="torch"))) as torch_client:
        answer = torch_client.post("/predict", json=records_of(frame)).json()
        assert torch_client.get("/metadata").json()["production"]["runtime"] == "torch"
    probabilities = np.array([p["probability"] for p in answer["predictions"]], np.float32)
    np.testing.assert_array_equal(probabilities, expected)


def test_a_refused_request_leaves_the_server_answering(client, golden):
    good = records_of(golden.head(1))
    refused = client.post("/predict", json=[{**good[0], "amount": 10**400}])
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["field"] == "amount"
    malformed = client.post("/predict", content=b'[{"amount": 1.0,',
                            headers={"content-type": "application/json"})
    assert malformed.status_code == 400
    assert client.post("/predict", json=good).status_code == 200


def test_a_body_over_10_mb_is_413_declared_or_streamed(client, golden):
    big = b"[" + b" " * (10 * 1024 * 1024) + b"]"
    as_json = {"content-type": "application/json"}
    assert client.post("/predict", content=big, headers=as_json).status_code == 413

    def chunks() -> Iterator[bytes]:
        for _ in range(11):
            yield b" " * (1024 * 1024)

    assert client.post("/predict", content=chunks(), headers=as_json).status_code == 413
    assert client.post("/predict", json=records_of(golden.head(1))).status_code == 200


def test_unseen_categories_and_out_of_range_values_are_flagged_and_counted(client, golden):
    records = records_of(golden.head(3))
    records[1]["country"] = "ZZ"
    records[2]["amount"] = 10_000_000.0
    answer = client.post("/predict", json=records).json()
    flags = [p["flags"] for p in answer["predictions"]]
    assert flags[0] == []
    assert flags[1] == [{"field": "country", "flag": "unseen_category", "value": "ZZ"}]
    assert [(f["field"], f["flag"]) for f in flags[2]] == [("amount", "out_of_range")]
    assert answer["flagged"] == 2
    metrics = client.get("/metrics").text
    version = answer["version"]
    assert re.search(rf'trainforge_predict_flagged_inputs_total\{{field="country",'
                     rf'flag="unseen_category",version="{version}"\}} [1-9]', metrics)


def test_metrics_count_requests_errors_and_latency_per_version(client, golden):
    version = production(client)
    client.post("/predict", json=records_of(golden.head(2)))
    client.post("/predict", json=[])
    client.post("/predict", content=b"{not json", headers={"content-type": "application/json"})
    metrics = client.get("/metrics").text
    # refused before a version was chosen: not the production version's error
    assert re.search(r'trainforge_predict_errors_total\{status="400",version="none"\} [1-9]',
                     metrics)
    assert not re.search(rf'status="400",version="{version}"', metrics)
    assert re.search(rf'trainforge_predict_requests_total\{{role="production",'
                     rf'version="{version}"\}} [1-9]', metrics)
    assert re.search(rf'trainforge_predict_errors_total\{{status="422",version="{version}"\}} '
                     r'[1-9]', metrics)
    assert re.search(rf'trainforge_predict_latency_seconds_count\{{version="{version}"\}} [1-9]',
                     metrics)
    assert re.search(rf'trainforge_predict_records_total\{{version="{version}"\}} [1-9]', metrics)


def test_metadata_names_the_version_and_its_lineage(client, trained):
    metadata = client.get("/metadata").json()
    served = metadata["production"]
    assert served["version"] == production(client) and served["run_id"] == trained.run_id
    assert served["data_version_id"] == trained.version.data_version_id is not None
    assert served["threshold"] == 0.5 and served["task"] == "binary"
    assert served["export"]["variants"][0]["name"] == "onnx-fp32"
    assert "amount" in served["inputs"] and "is_fraud" not in served["inputs"]


def test_without_a_production_version_predict_is_503_and_health_says_so(trained):
    app = create_app(router_of(trained, model_name="no_such_model"))
    with live_server(app) as client:
        assert client.get("/health").status_code == 503
        assert client.post("/predict", json=[{"amount": 1}]).status_code == 503


def test_the_canary_answers_its_share_of_2000_requests(client, trained, golden):
    canary = trained.register(ModelStage.CANARY)
    wait_for(lambda: client.get("/health").json()["versions"]["canary"] == canary.version)
    one = records_of(golden.head(1))
    answered = [client.post("/predict", json=one).json() for _ in range(2000)]
    to_canary = sum(a["role"] == "canary" for a in answered)
    assert 2000 * CANARY_SHARE - 60 <= to_canary <= 2000 * CANARY_SHARE + 60
    assert {a["version"] for a in answered if a["role"] == "canary"} == {canary.version}
    sticky = {client.post("/predict", json=one, headers={"x-request-id": "client-7"})
              .json()["version"] for _ in range(20)}
    assert len(sticky) == 1
    metrics = client.get("/metrics").text
    assert f'role="canary",version="{canary.version}"' in metrics


def test_a_new_production_version_is_served_without_a_restart(client, trained, golden):
    before = production(client)
    newer = trained.register(ModelStage.PRODUCTION)
    wait_for(lambda: production(client) == newer.version)
    answers = [client.post("/predict", json=records_of(golden.head(1))).json()
               for _ in range(40)]
    by_production = {a["version"] for a in answers if a["role"] == "production"}
    assert before != newer.version and by_production == {newer.version}
