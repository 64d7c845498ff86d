"""The API's answers on a real store behind uvicorn: the seed's run endpoint, runs of an
experiment in the `runs list` language with keyset pages, the API's own schemas (no system
namespace or environment), errors as JSON with their status, a stage move recorded and a move
the stages refuse; and the CLI that manages users and tokens."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from live_server import free_port, live_server, wait_for
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from server_home import editor_session

from trainforge.config import Settings, load_spec
from trainforge.entities import (
    DataVersion,
    DeliveryState,
    ModelStage,
    Pipeline,
    Role,
    RunStatus,
)
from trainforge.errors import DataError, PipelineFailed
from trainforge.orchestration import Dag
from trainforge.orchestration.steps import StepDeclaration, make_step
from trainforge.orchestration.user_pipelines import run_steps
from trainforge.pipeline import register_pipeline
from trainforge.profiles import profile_source
from trainforge.server import authenticate, create_server_app, issue_token
from trainforge.session import Session
from trainforge.storage import Store, open_store
from trainforge.tuning import StudyContext, create_study, open_storage

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
DIGITS_SPEC = Path(__file__).resolve().parents[2] / "examples" / "digits" / "pipeline.yaml"
FRAUD_SPEC = DIGITS_SPEC.parents[1] / "fraud" / "pipeline.yaml"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


@dataclass
class Api:
    client: httpx.Client
    home: Path
    session: Session
    store: Store
    experiment_id: str
    run_ids: list[str]  # oldest first


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    home = tmp_path_factory.mktemp("api-home")
    session, token = editor_session(home, "ann")
    store = session.store
    experiment = store.get_or_create_experiment("fraud").experiment_id
    run_ids = []
    for number in range(5):
        run = store.create_run(experiment, {"lr": 10.0 ** -number}, {"host": "secret-box"},
                               "unused", system={"process": {"host": "h", "pid": 1}})
        store.set_summary_metrics(run.run_id, {"test_roc_auc": 0.80 + number / 100})
        store.end_run(run.run_id, RunStatus.COMPLETED)
        run_ids.append(run.run_id)
    with live_server(create_server_app(session)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        yield Api(client, home, session, store, experiment, run_ids)


def test_the_seeds_run_endpoint_answers_the_run_and_nothing_of_its_system(api: Api) -> None:
    run_id = api.run_ids[2]
    answer = api.client.get(f"/api/v1/experiments/{api.experiment_id}/runs/{run_id}")

    assert answer.status_code == 200
    run = answer.json()
    assert (run["run_id"], run["status"], run["params"]) == (run_id, "completed", {"lr": 0.01})
    assert run["metrics"]["test_roc_auc"] == pytest.approx(0.82)
    assert "system" not in run and "environment" not in run and "secret-box" not in answer.text


def test_every_answer_says_how_long_the_server_took(api: Api) -> None:
    answers = [api.client.get(f"/api/v1/experiments/{api.experiment_id}/runs"),
               api.client.get("/api/v1/experiments/none"),
               api.client.get("/health"),
               api.client.get("/api/v1/experiments", headers={"Authorization": "Bearer x"})]

    assert [a.status_code for a in answers] == [200, 404, 200, 401]
    for answer in answers:
        name, _, duration = answer.headers["server-timing"].partition(";dur=")
        assert name == "app" and 0 <= float(duration) < 30_000


def test_a_metric_json_cannot_hold_is_answered_null(api: Api) -> None:
    run_id = api.run_ids[3]
    api.store.set_summary_metrics(run_id, {"overflowed_loss": math.inf})

    answer = api.client.get(f"/api/v1/experiments/{api.experiment_id}/runs/{run_id}")

    assert answer.status_code == 200 and answer.json()["metrics"]["overflowed_loss"] is None


def test_a_run_of_another_experiment_or_none_is_404_naming_it(api: Api) -> None:
    other = api.store.get_or_create_experiment("other").experiment_id
    elsewhere = api.client.get(f"/api/v1/experiments/{other}/runs/{api.run_ids[0]}")
    missing = api.client.get(f"/api/v1/experiments/{api.experiment_id}/runs/nope")
    no_experiment = api.client.get("/api/v1/experiments/nope/runs")

    assert elsewhere.status_code == 404 and other in elsewhere.json()["detail"]
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    assert no_experiment.status_code == 404


def test_runs_are_filtered_sorted_and_paged_as_runs_list_does(api: Api) -> None:
    path = f"/api/v1/experiments/{api.experiment_id}/runs"
    query = {"filter": "metrics.test_roc_auc >= 0.81", "sort": "-metrics.test_roc_auc",
             "limit": 2}
    seen, cursor = [], None
    while True:
        page = api.client.get(path, params={**query, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        seen += [run["run_id"] for run in page.json()["items"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break

    assert seen == api.run_ids[1:][::-1]
    newest_first = api.client.get(path).json()["items"]
    assert [r["run_id"] for r in newest_first] == api.run_ids[::-1]


@pytest.mark.parametrize(("params", "named"), [
    ({"filter": "metrics.test_roc_auc >>> 1"}, "filter"),
    ({"sort": "metrics.test_roc_auc sideways"}, "sort keys"),
    ({"cursor": "not-a-cursor"}, "cursor"),
])
def test_a_malformed_query_is_400_naming_what_is_wrong(api: Api, params: dict[str, str],
                                                       named: str) -> None:
    answer = api.client.get(f"/api/v1/experiments/{api.experiment_id}/runs", params=params)
    assert answer.status_code == 400 and answer.json()["detail"]
    assert named in answer.json()["detail"].lower() or "position" in answer.json()["detail"]


def test_a_limit_out_of_range_is_refused_by_the_schema(api: Api) -> None:
    answer = api.client.get("/api/v1/experiments", params={"limit": 0})
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["query", "limit"]


def test_experiments_and_the_openapi_document_are_listed(api: Api) -> None:
    experiments = api.client.get("/api/v1/experiments").json()
    document = api.client.get("/openapi.json").json()

    assert [e["name"] for e in experiments["items"]][:1] == ["fraud"]
    assert "/api/v1/experiments/{experiment_id}/runs/{run_id}" in document["paths"]
    assert set(document["components"]["schemas"]["RunOut"]["properties"]).isdisjoint(
        {"system", "environment", "artifact_uri"})


def test_a_move_the_stages_do_not_allow_is_422_naming_them(api: Api) -> None:
    version = api.store.create_model_version("m", api.run_ids[0], "unused", ModelStage.STAGING,
                                             {})
    api.client.put(f"/api/v1/models/m/versions/{version.version}/stage",
                   json={"stage": "archived"})

    answer = api.client.put(f"/api/v1/models/m/versions/{version.version}/stage",
                            json={"stage": "production"})
    unknown_stage = api.client.put(f"/api/v1/models/m/versions/{version.version}/stage",
                                   json={"stage": "heaven"})
    extra_field = api.client.put(f"/api/v1/models/m/versions/{version.version}/stage",
                                 json={"stage": "staging", "by": "me"})

    assert answer.status_code == 422 and "archived" in answer.json()["detail"]
    assert unknown_stage.status_code == 422 and extra_field.status_code == 422
    listed = api.client.get("/api/v1/models/m/versions").json()["items"]
    assert [(v["version"], v["stage"]) for v in listed] == [(version.version, "archived")]


def test_a_client_logs_a_run_through_the_api_and_a_batch_sent_twice_is_stored_once(
        api: Api) -> None:
    client = api.client
    experiment = client.post("/api/v1/experiments", json={"name": "remote"}).json()
    run = client.post(f"/api/v1/experiments/{experiment['experiment_id']}/runs",
                      json={"params": {"lr": 0.1}, "tags": {"team": "risk"}}).json()
    base = f"/api/v1/runs/{run['run_id']}"
    batch = {"batch_id": "b-1", "points": [
        {"key": "train/loss", "value": 1.0 / (step + 1), "step": step, "timestamp": 1e9 + step}
        for step in range(100)] + [{"key": "grad_norm", "value": None, "step": 0,
                                    "timestamp": 1e9}]}

    first = client.post(f"{base}/metrics", json=batch)
    again = client.post(f"{base}/metrics", json=batch)  # a retry after a lost answer
    client.put(f"{base}/params", json={"values": {"epochs": 3}})
    client.put(f"{base}/tags", json={"values": {"team": "fraud"}})
    beat = client.post(f"{base}/heartbeat")
    ended = client.post(f"{base}/end", json={"status": "completed"})

    assert (first.json(), again.json()) == ({"stored": True}, {"stored": False})
    assert beat.status_code == 204
    assert ended.status_code == 200 and ended.json()["status"] == "completed"
    series = client.get(f"{base}/metrics/train/loss").json()["items"]
    assert [p["step"] for p in series] == list(range(100))  # once, not twice
    assert client.get(f"{base}/metrics/grad_norm").json()["items"][0]["value"] is None  # NaN
    short = client.get(f"{base}/metrics/train/loss", params={"max_points": 10}).json()
    assert 2 <= len(short["items"]) <= 10 and short["items"][0]["value"] == 1.0
    assert client.get(f"{base}/metrics").json()["items"] == ["grad_norm", "train/loss"]
    stored = api.store.get_run(run["run_id"])
    assert stored.params == {"lr": 0.1, "epochs": 3} and stored.tags == {"team": "fraud"}
    assert stored.artifact_uri.endswith(run["run_id"]) and stored.status is RunStatus.COMPLETED


@pytest.mark.parametrize(("path", "body", "status"), [
    ("/api/v1/runs/nope/metrics", {"batch_id": "b", "points": [
        {"key": "k", "value": 1.0, "step": 0, "timestamp": 0.0}]}, 404),
    ("/api/v1/runs/RUN/metrics", {"batch_id": "b", "points": []}, 422),
    ("/api/v1/runs/nope/end", {"status": "completed"}, 404),
    ("/api/v1/runs/RUN/end", {"status": "running"}, 422),
    ("/api/v1/runs/RUN/metrics", {"batch_id": "b", "points": [
        {"key": "k", "value": 1.0, "step": 0, "timestamp": 0.0}] * 10_001}, 422),
    ("/api/v1/runs/RUN/metrics", {"batch_id": "b", "points": [
        {"key": "k", "value": 1.0, "step": -1, "timestamp": 0.0}]}, 422),
    ("/api/v1/experiments/nope/runs", {}, 404),
])
def test_bad_writes_are_refused_naming_what_is_wrong(api: Api, path: str, body: dict[str, Any],
                                                     status: int) -> None:
    answer = api.client.post(path.replace("RUN", api.run_ids[0]), json=body)
    assert answer.status_code == status, answer.text
    assert answer.json()["detail"]
    assert api.store.get_run(api.run_ids[0]).status is RunStatus.COMPLETED


@pytest.fixture(scope="module")
def admin(api: Api) -> dict[str, str]:
    """The headers of an admin's token (webhooks are theirs)."""
    api.store.add_user("hooks-admin", Role.ADMIN)
    return {"Authorization": f"Bearer {issue_token(api.store, 'hooks-admin')[0]}"}


def test_an_admin_subscribes_webhooks_reads_their_deliveries_and_sends_one_again(
        api: Api, admin: dict[str, str]) -> None:
    body = {"url": "https://hooks.example/in", "events": ["model.stage_changed"],
            "secret_env": "HOOK_SECRET"}

    added = api.client.post("/api/v1/webhooks", json=body, headers=admin)
    as_editor = api.client.get("/api/v1/webhooks")
    listed = api.client.get("/api/v1/webhooks", headers=admin).json()["items"]

    assert added.status_code == 200, added.text
    hook = added.json()
    assert {k: hook[k] for k in body} == body and listed == [hook]
    assert as_editor.status_code == 403 and "admin" in as_editor.json()["detail"]

    now = datetime.now(timezone.utc)
    api.store.add_event("model.stage_changed", "model:m", {"n": 1}, event_id="ev-1",
                        occurred_at=now)
    deliveries = f"/api/v1/webhooks/deliveries?webhook_id={hook['webhook_id']}"
    (pending,) = api.client.get(deliveries, headers=admin).json()["items"]
    assert (pending["event_id"], pending["state"], pending["attempts"]) == ("ev-1", "pending", 0)
    assert pending["next_attempt_at"] is not None and pending["subject"] == "model:m"
    again = f"/api/v1/webhooks/deliveries/{pending['delivery_id']}/redeliver"
    assert api.client.post(again, headers=admin).status_code == 409  # pending already

    due = datetime.now(timezone.utc) + timedelta(seconds=1)  # a deliverer's pass, once due
    claimed = api.store.claim_delivery(pending["delivery_id"], "test", now=due,
                                       leased_until=due + timedelta(minutes=1))
    assert claimed is not None
    api.store.finish_delivery(pending["delivery_id"], "test", status_code=400,
                              error="HTTP 400", state=DeliveryState.DEAD, next_attempt_at=None)
    (dead,) = api.client.get(deliveries + "&state=dead", headers=admin).json()["items"]
    sent = api.client.post(again, headers=admin)

    assert (dead["last_error"], dead["next_attempt_at"]) == ("HTTP 400", None)
    assert sent.status_code == 200 and sent.json()["state"] == "pending"
    assert api.client.post("/api/v1/webhooks/deliveries/999999/redeliver",
                           headers=admin).status_code == 404


@pytest.mark.parametrize(("change", "named"), [
    ({"url": "ftp://hooks.example/in"}, "webhook URL"),
    ({"url": "https:///no-host"}, "webhook URL"),
    ({"events": ["model.deleted"]}, "expected one or more of"),
    ({"secret_env": "1-BAD"}, "secret variable"),
])
def test_a_bad_subscription_is_refused_naming_what_is_wrong(
        api: Api, admin: dict[str, str], change: dict[str, Any], named: str) -> None:
    before = api.store.list_webhooks().items
    body = {"url": "https://hooks.example/in", "events": ["model.stage_changed"],
            "secret_env": "HOOK_SECRET", **change}

    answer = api.client.post("/api/v1/webhooks", json=body, headers=admin)

    assert answer.status_code == 400 and named in answer.json()["detail"]
    assert api.store.list_webhooks().items == before


def test_data_versions_are_listed_with_their_names_and_read_by_id_prefix_or_name(
        api: Api) -> None:
    version = DataVersion("cd" * 32, "data/day-*.parquet",
                          ({"name": "day-1.parquet", "sha256": "ef" * 32, "rows": 10},), 10)
    api.store.put_data_version(version)
    api.store.number_data_version("feed", version.data_version_id)

    listed = api.client.get("/api/v1/data/versions").json()["items"]
    read = [api.client.get(f"/api/v1/data/versions/{ref}").json()
            for ref in (version.data_version_id, version.data_version_id[:8], "feed@1")]

    [entry] = [v for v in listed if v["data_version_id"] == version.data_version_id]
    assert (entry["names"], entry["num_rows"], entry["files"]) == (["feed@1"], 10, None)
    assert all(r["data_version_id"] == version.data_version_id for r in read)
    assert read[0]["files"] == [{"name": "day-1.parquet", "sha256": "ef" * 32, "rows": 10}]
    short = api.client.get("/api/v1/data/versions/cd")
    unknown = api.client.get("/api/v1/data/versions/abcdef99")
    untagged = api.client.get("/api/v1/data/versions/nope@1")
    assert short.status_code == 400 and "6 characters" in short.json()["detail"]
    assert unknown.status_code == 404 and untagged.status_code == 404


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf
def test_a_data_versions_profile_and_its_drift_are_read_from_the_stored_sketches(
        api: Api, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    days = []
    for day, shift in enumerate((0.0, 0.0, 6.0)):
        folder = tmp_path / f"day{day}"
        folder.mkdir()
        pd.DataFrame({"amount": rng.normal(100 + shift, 15, 4_000),
                      "channel": rng.choice(["web", "app"], 4_000)}).assign(
            peak=float("inf")).to_parquet(folder / "rows.parquet")
        stored = profile_source(api.store, str(folder / "rows.parquet"))
        api.store.put_data_version(DataVersion(stored.version_id, str(folder), (), 4_000))
        api.store.number_data_version("daily", stored.version_id)
        days.append(stored.version_id)

    profile = api.client.get("/api/v1/data/versions/daily@1/profile")
    quiet = api.client.get("/api/v1/data/versions/daily@2/drift", params={"against": "daily@1"})
    moved = api.client.get(f"/api/v1/data/versions/{days[2][:8]}/drift",
                           params={"against": "daily@1"})

    assert profile.status_code == 200, profile.text
    answer = profile.json()
    assert (answer["data_version_id"], answer["rows"]) == (days[0], 4_000)
    amount = answer["columns"]["amount"]
    assert amount["kind"] == "numeric" and 95 < amount["quantiles"]["p50"] < 105
    assert {v for v, _ in answer["columns"]["channel"]["top"]} == {"web", "app"}
    assert answer["columns"]["peak"]["max"] is None  # infinity: JSON cannot hold it
    assert quiet.json()["drifted"] is False and quiet.json()["current"] == days[1]
    drift = moved.json()
    assert drift["drifted"] is True and drift["reference"] == days[0]
    [shifted] = [c for c in drift["columns"] if c["column"] == "amount"]
    assert shifted["drifted"] and shifted["statistics"]["wasserstein"] > 0.1
    assert drift["schema_changes"] == {"added": [], "removed": [], "retyped": []}


def test_a_profile_or_drift_of_a_version_without_a_stored_profile_is_refused(api: Api) -> None:
    version = DataVersion("ab" * 32, "data/x.parquet", (), 0)
    api.store.put_data_version(version)
    missing = api.client.get("/api/v1/data/versions/abababab/profile")
    no_reference = api.client.get("/api/v1/data/versions/abababab/drift")
    unknown = api.client.get("/api/v1/data/versions/abababab/drift",
                             params={"against": "nope@1"})

    assert missing.status_code == 404 and "has no stored profile" in missing.json()["detail"]
    assert no_reference.status_code == 422 and "against" in no_reference.text
    assert unknown.status_code == 404


def counted() -> int:
    return 3


def checked(count: int) -> int:
    if count > 2:
        raise DataError(f"rows.csv: {count} rows, expected at most 2")
    return count


def test_pipeline_runs_are_listed_and_shown_with_their_steps_as_pipeline_show_does(
        api: Api) -> None:
    steps = (make_step(counted, StepDeclaration(outputs=("count",))),
             make_step(checked, StepDeclaration(outputs=("checked",))))
    good = run_steps(Dag("nightly", steps[:1]), api.session).pipeline_run
    with pytest.raises(PipelineFailed):
        run_steps(Dag("nightly", steps), api.session)
    other = run_steps(Dag("weekly", steps[:1]), api.session).pipeline_run

    listed = api.client.get("/api/v1/pipeline-runs", params={"pipeline_id": "nightly"}).json()
    failed = api.client.get("/api/v1/pipeline-runs", params={"status": "failed"}).json()
    first = api.client.get("/api/v1/pipeline-runs", params={"limit": 1}).json()
    bad_id = listed["items"][0]["pipeline_run_id"]
    shown = api.client.get(f"/api/v1/pipeline-runs/{bad_id}").json()

    assert [r["status"] for r in listed["items"]] == ["failed", "succeeded"]  # newest first
    assert listed["items"][1]["pipeline_run_id"] == good.pipeline_run_id
    assert [r["pipeline_run_id"] for r in failed["items"]] == [bad_id]
    assert [r["pipeline_run_id"] for r in first["items"]] == [other.pipeline_run_id]
    rest = api.client.get("/api/v1/pipeline-runs", params={"cursor": first["next_cursor"]})
    assert [r["pipeline_id"] for r in rest.json()["items"]] == ["nightly", "nightly"]
    assert [(s["step"], s["attempt"], s["state"]) for s in shown["steps"]] == [
        ("counted", 1, "cached"), ("checked", 1, "failed")]  # counted: the first run's
    [executed] = api.store.list_step_runs(good.pipeline_run_id)
    assert shown["steps"][0]["cached_from"] == executed.step_run_id
    assert "expected at most 2" in shown["steps"][1]["error"]
    assert "outputs" not in shown["steps"][0] and "cache_parts" not in shown["steps"][0]
    assert shown["run_id"] == api.store.get_pipeline_run(bad_id).run_id


def test_registered_pipelines_are_listed_and_shown_with_their_spec(api: Api) -> None:
    register_pipeline(api.store, FRAUD_SPEC, "fraud_model_v2", user="ann")
    api.store.upsert_pipeline(Pipeline("recorded-only", "recorded-only", {"steps": []}))

    registered = api.client.get("/api/v1/pipelines", params={"registered": "true"}).json()
    everything = api.client.get("/api/v1/pipelines").json()
    shown = api.client.get("/api/v1/pipelines/fraud_model_v2").json()
    recorded = api.client.get("/api/v1/pipelines/recorded-only").json()
    missing = api.client.get("/api/v1/pipelines/nope")

    assert [p["pipeline_id"] for p in registered["items"]] == ["fraud_model_v2"]
    assert registered["items"][0]["spec"] is None  # a listing leaves the specs out
    assert {"fraud_model_v2", "recorded-only"} <= {p["pipeline_id"] for p in everything["items"]}
    assert shown["settable"] == ["data_source", "model_type", "hyperparams.lr",
                                 "hyperparams.epochs", "hyperparams.batch_size", "resources"]
    assert shown["spec"]["submit"]["hyperparams"]["lr"] == "training.optimizer.lr"
    assert (shown["name"], shown["created_by"]) == ("fraud", "ann") and shown["registered_at"]
    assert [s["name"] for s in shown["dag_config"]["steps"]][:2] == ["ingest", "validate"]
    assert (recorded["registered_at"], recorded["settable"], recorded["spec"]) == (None, [], None)
    assert missing.status_code == 404 and "pipeline 'nope' not found" in missing.text


def test_a_pipeline_run_that_does_not_exist_or_a_bad_status_is_refused(api: Api) -> None:
    missing = api.client.get("/api/v1/pipeline-runs/nope")
    bad = api.client.get("/api/v1/pipeline-runs", params={"status": "done"})
    api.store.get_or_create_experiment("other")  # two experiments, so a page of one has a cursor
    foreign = api.client.get("/api/v1/experiments", params={"limit": 1})
    cursor = foreign.json()["next_cursor"]
    crossed = api.client.get("/api/v1/pipeline-runs", params={"cursor": cursor})

    assert missing.status_code == 404 and "pipeline run 'nope' not found" in missing.text
    assert bad.status_code == 422 and "status" in bad.text
    assert crossed.status_code == 400 and "was not made by list_pipeline_runs" in crossed.text


def test_studies_are_listed_and_shown_as_tune_show_shows_them(api: Api) -> None:
    spec = load_spec(DIGITS_SPEC)  # its tuning: section, a budget of 12 trials
    study_run = api.store.create_run(api.experiment_id, {}, {}, "unused")
    storage = open_storage(Settings.from_env({"TRAINFORGE_HOME": str(api.home)})
                           .database_url.get_secret_value())
    create_study(storage, "digits-api", StudyContext(spec, None, (), study_run.run_id, None),
                 "pipeline.yaml")

    listed = api.client.get("/api/v1/studies").json()["items"]
    shown = api.client.get("/api/v1/studies/digits-api").json()
    missing = api.client.get("/api/v1/studies/nope")

    assert [(s["name"], s["trials"], s["best_value"]) for s in listed] == [("digits-api", 12,
                                                                            None)]
    assert (shown["study_run_id"], shown["states"], shown["best"]) == (
        study_run.run_id, {"waiting": 12}, None)
    assert len(shown["trials"]) == 12 and shown["metric"] == spec.tuning.objective.metric
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


def test_schemathesis_finds_no_server_error_and_no_undocumented_answer(api: Api) -> None:
    """Every operation, 20 requests its schema allows and 20 it does not (derandomized), with a
    valid editor token: no 5xx, and every status, media type and body as documented."""
    document = api.client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(document)
    headers = {"Authorization": api.client.headers["Authorization"]}
    operations = [(path, method.upper(), _breakable(spec))
                  for path, methods in document["paths"].items()
                  for method, spec in methods.items()]
    assert len(operations) >= 7 and sum(breakable for *_, breakable in operations) >= 3
    for path, method, breakable in operations:
        modes = [schemathesis.GenerationMode.POSITIVE]
        if breakable:
            modes.append(schemathesis.GenerationMode.NEGATIVE)
        for mode in modes:
            @given(case=schema[path][method].as_strategy(generation_mode=mode))
            @settings(max_examples=20, derandomize=True, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            def run(case: schemathesis.Case) -> None:
                case.call_and_validate(base_url=str(api.client.base_url), headers=headers,
                                       checks=CHECKS)

            run()


def _breakable(operation: dict[str, Any]) -> bool:
    """Whether a request can break the operation's schema: it takes a body or a parameter
    that is not any string (a path of strings only has nothing invalid to send)."""
    def typed(schema: dict[str, Any]) -> bool:
        kinds = [schema, *schema.get("anyOf", [])]
        return any(k.get("type") not in (None, "string", "null") or "enum" in k for k in kinds)

    return "requestBody" in operation or any(typed(p.get("schema", {}))
                                             for p in operation.get("parameters", []))


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAINFORGE_HOME": str(home)}
    env.pop("TRAINFORGE_DB", None)
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, env=env,
                          timeout=120)


@contextmanager
def _server_process(home: Path) -> Iterator[httpx.Client]:
    """`trainforge server` on a free loopback port, as a user starts it, until the block ends."""
    port = free_port()
    env = {**os.environ, "TRAINFORGE_HOME": str(home)}
    env.pop("TRAINFORGE_DB", None)
    process = subprocess.Popen([TRAINFORGE, "server", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            wait_for(lambda: _healthy(client) or process.poll() is not None, timeout=60)
            assert process.poll() is None, "trainforge server exited"
            yield client
    finally:
        process.terminate()
        process.wait(30)


def _healthy(client: httpx.Client) -> bool:
    try:
        return client.get("/health").status_code == 200
    except httpx.TransportError:
        return False


def test_the_cli_adds_users_and_issues_lists_and_revokes_tokens(tmp_path: Path) -> None:
    assert _cli(tmp_path, "users", "add", "ci", "--role", "editor").returncode == 0
    created = _cli(tmp_path, "tokens", "create", "ci", "--role", "viewer", "--description",
                   "nightly")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    store = open_store(Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)})
                       .database_url.get_secret_value())
    caller = authenticate(store, token)
    assert (caller.user, caller.role) == ("ci", Role.VIEWER)

    listing = _cli(tmp_path, "tokens", "list", "--json")
    assert caller.token_id in listing.stdout and token.split("_")[-1] not in listing.stdout
    with _server_process(tmp_path) as client:
        headers = {"Authorization": f"Bearer {token}"}
        assert client.get("/api/v1/whoami", headers=headers).json()["user"] == "ci"
        assert _cli(tmp_path, "tokens", "revoke", caller.token_id).returncode == 0
        assert client.get("/api/v1/whoami", headers=headers).status_code == 401  # at once
    assert store.get_token(caller.token_id).revoked_at is not None
    assert _cli(tmp_path, "users", "set-role", "ci", "--role", "viewer").returncode == 0
    assert store.get_user("ci").role is Role.VIEWER


def test_the_cli_refuses_bad_users_and_tokens_naming_them(tmp_path: Path) -> None:
    assert _cli(tmp_path, "users", "add", "ci", "--role", "editor").returncode == 0
    refusals = [
        (("tokens", "create", "nobody"), 1, "user 'nobody' not found"),
        (("tokens", "create", "ci", "--role", "admin"), 2, "cannot be admin"),
        (("tokens", "create", "ci", "--expires-in-days", "0"), 2, "must be positive"),
        (("users", "add", "ci"), 2, "user 'ci' already exists"),
        (("users", "set-role", "nobody", "--role", "viewer"), 1, "user 'nobody' not found"),
        (("tokens", "revoke", "000000000000"), 1, "token '000000000000' not found"),
        (("users", "add", "x", "--role", "root"), 2, "root"),
    ]
    for args, code, says in refusals:
        result = _cli(tmp_path, *args)
        assert (result.returncode, says in result.stderr) == (code, True), (args, result.stderr)
    listing = _cli(tmp_path, "tokens", "list", "--json")
    assert listing.stdout.strip() == "[]"  # no refused token was stored
