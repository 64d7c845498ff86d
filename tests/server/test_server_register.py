"""The seed's `POST /api/v1/models/register`: a model trained elsewhere registered under its
label ("3.1"), which then names it in the seed's stage route; a run's artifact folder
registers that run's model through its spec's gates (refused 422 with the report); a label
taken is 409 and leaves nothing behind; a bad label or stage is 422."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from live_server import live_server
from server_home import editor_session

from trainforge.config import load_spec
from trainforge.entities import RunStatus
from trainforge.registry import register_version, set_alias
from trainforge.server import create_server_app
from trainforge.session import Session
from trainforge.tracking import RegistrationEntry, system_of

FRAUD_SPEC = Path(__file__).resolve().parents[2] / "examples" / "fraud" / "pipeline.yaml"
SEED_BODY = {"name": "fraud_detector", "version": "3.1",
             "artifact_uri": "s3://models/fraud/run_123/",
             "metrics": {"auc": 0.97, "f1": 0.89}, "stage": "staging"}


@dataclass
class Registry:
    client: httpx.Client
    session: Session


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    session, token = editor_session(tmp_path_factory.mktemp("register-home"), "ci")
    with live_server(create_server_app(session)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        yield Registry(client, session)


def test_the_seeds_registration_then_its_promotion_by_label(registry: Registry) -> None:
    registered = registry.client.post("/api/v1/models/register", json=SEED_BODY)
    promoted = registry.client.put("/api/v1/models/fraud_detector/versions/3.1/stage",
                                   json={"stage": "production", "reason": "the seed's example"})

    assert registered.status_code == 200, registered.text
    version = registered.json()
    assert (version["label"], version["version"], version["stage"]) == ("3.1", "1", "staging")
    assert version["metrics"] == {"auc": 0.97, "f1": 0.89}
    assert promoted.status_code == 200, promoted.text
    assert (promoted.json()["version"], promoted.json()["to_stage"]) == ("1", "production")
    store = registry.session.store
    run = store.get_run(store.get_model_version("fraud_detector", "1").run_id)
    assert run.status is RunStatus.COMPLETED and run.artifact_uri == SEED_BODY["artifact_uri"]
    assert system_of(run).registration == RegistrationEntry(
        model="fraud_detector", label="3.1", artifact_uri=SEED_BODY["artifact_uri"], user="ci")
    assert (run.params, run.tags) == ({}, {})  # what trainforge records is no user's param


def test_a_label_taken_is_409_and_leaves_nothing_behind(registry: Registry) -> None:
    body = {**SEED_BODY, "name": "twice", "version": "v2"}
    assert registry.client.post("/api/v1/models/register", json=body).status_code == 200
    store = registry.session.store
    runs_before = len(store.search_runs(limit=1000).items)

    again = registry.client.post("/api/v1/models/register", json=body)

    assert again.status_code == 409 and "'v2'" in again.json()["detail"]
    assert [v.version for v in store.list_model_versions("twice").items] == ["1"]
    assert len(store.search_runs(limit=1000).items) == runs_before


@pytest.mark.parametrize(("change", "field"), [
    ({"version": "3"}, "version"), ({"version": "production"}, "version"),
    ({"version": "a b"}, "version"), ({"version": ""}, "version"),
    ({"stage": "production"}, "stage"), ({"metrics": {"auc": "high"}}, "metrics"),
    ({"owner": "me"}, "owner"),
])
def test_a_bad_registration_is_422_naming_the_field(registry: Registry, change: dict,
                                                    field: str) -> None:
    answer = registry.client.post("/api/v1/models/register", json={**SEED_BODY, **change,
                                                                    "name": "bad"})
    assert answer.status_code == 422
    assert field in {str(part) for error in answer.json()["detail"] for part in error["loc"]}
    assert registry.session.store.list_model_versions("bad").items == ()


def test_a_runs_folder_registers_that_runs_model_through_its_specs_gates(
        registry: Registry) -> None:
    session = registry.session
    spec = load_spec(FRAUD_SPEC).model_dump(mode="json")  # gates test_roc_auc >= 0.85
    experiment = session.store.get_or_create_experiment("fraud").experiment_id
    run = session.store.create_run(experiment, {}, {}, session.artifacts.run_uri("r-gated"),
                                   run_id="r-gated", git_commit="abc123",
                                   system={"resolved_spec": spec})
    body = {"name": "gated", "version": "2026.11", "artifact_uri": run.artifact_uri,
            "stage": "staging"}

    refused = registry.client.post("/api/v1/models/register",
                                   json={**body, "metrics": {"test_roc_auc": 0.6}})
    taken = registry.client.post("/api/v1/models/register",
                                 json={**body, "metrics": {"test_roc_auc": 0.9}})

    assert refused.status_code == 422
    [gate] = refused.json()["gate_report"]
    assert (gate["gate"], gate["passed"]) == ("threshold:test_roc_auc", False)
    assert taken.status_code == 200, taken.text
    version = session.store.get_model_version("gated", taken.json()["version"])
    assert (version.run_id, version.git_commit, version.label) == ("r-gated", "abc123",
                                                                   "2026.11")


def test_registering_as_none_skips_the_gates_and_other_stages_are_refused(
        registry: Registry) -> None:
    session = registry.session
    version = register_version(session.store, session.artifacts, "plain", "0.1",
                               "file:///models/plain", {}, "none", user="ann")
    assert version.stage.value == "none" and version.label == "0.1"
    with pytest.raises(ValueError, match="registered to staging or none, then promoted"):
        register_version(session.store, session.artifacts, "plain", "0.2",
                         "file:///models/plain", {}, "canary")


def test_an_alias_cannot_take_a_labels_name(registry: Registry) -> None:
    session = registry.session
    register_version(session.store, session.artifacts, "aliased", "v7", "file:///models/a",
                     {}, "none")
    with pytest.raises(ValueError, match="alias 'v7': it is the label of aliased version 1"):
        set_alias(session.store, "aliased", "v7", "1")
    assert set_alias(session.store, "aliased", "champion", "v7").label == "v7"  # a label names
