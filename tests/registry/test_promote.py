"""Promotions of two real fraud models (see conftest): canary then production, the production
baseline re-scored on the candidate's test split (stored numbers ignored), refusals and forced
promotions recorded, slice-gap and export-parity gates, lineage and diffs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from home import home_artifacts, home_store
from registry_versions import MAX_DROP, MIN_AUC
from sqlalchemy import create_engine, text
from webhook_receiver import SECRET, Receiver, serve

from trainforge.config import Settings
from trainforge.entities import ModelStage as S
from trainforge.entities import StageOutcome
from trainforge.errors import GatesFailed, NotFound, PromotionError
from trainforge.events import Deliverer, subscribe
from trainforge.registry import (
    Promotion,
    diff,
    history,
    lineage,
    promote,
    resolve_version,
    rollback,
    set_alias,
)
from trainforge.storage import SqlStore

MODEL = "fraud_detector"


@pytest.fixture
def store(registry_home: Path) -> Iterator[SqlStore]:
    opened = home_store()
    try:
        yield opened
    finally:
        opened.close()


def _promote(store: SqlStore, version: str, to: S, **options: Any) -> Promotion:
    return promote(store, home_artifacts(), MODEL, version, to, user="ann", **options)


def _gate(report: list[dict[str, Any]], name: str = "max_drop:test_roc_auc") -> dict[str, Any]:
    [found] = [gate for gate in report if gate["gate"] == name]
    return found


def _stored_auc(store: SqlStore, version: str) -> float:
    return store.get_model_version(MODEL, version).metrics["test_roc_auc"]


def _tamper_metrics(version: str, metrics: dict[str, float]) -> None:
    """Overwrite a version's stored metrics behind the store's back."""
    engine = create_engine(Settings.from_env().database_url.get_secret_value())
    with engine.begin() as connection:
        connection.execute(text("UPDATE model_versions SET metrics = :m WHERE model_name = :n "
                                "AND version = :v"),
                           {"m": json.dumps(metrics), "n": MODEL, "v": version})
    engine.dispose()


def test_canary_then_production_archives_nothing_and_then_the_holder(store: SqlStore) -> None:
    canary = _promote(store, "2", S.CANARY, reason="try it on 5% of traffic")
    assert canary.change.to_stage is S.CANARY and canary.replaced is None
    first = _promote(store, "1", S.PRODUCTION, reason="first production model")
    assert [g["gate"] for g in first.gate_report] == [
        "threshold:test_roc_auc", "max_drop:test_roc_auc"]
    gate = _gate(first.gate_report)
    assert gate["passed"]
    assert gate["message"] == "no production version to compare with"
    assert {v.version: v.stage for v in store.list_model_versions(MODEL).items} == {
        "1": S.PRODUCTION, "2": S.CANARY}
    assert resolve_version(store, MODEL, "production").version == "1"
    assert resolve_version(store, MODEL, "canary").version == "2"


def test_a_worse_candidate_is_refused_against_the_rescored_production_model(
    store: SqlStore,
) -> None:
    truth = {"1": _stored_auc(store, "1"), "2": _stored_auc(store, "2")}
    assert truth["1"] - truth["2"] > MAX_DROP, "the fixture's versions differ enough"
    _promote(store, "1", S.PRODUCTION, reason="baseline")
    # Stored numbers that would let version 2 through if the gate compared them:
    _tamper_metrics("1", {"test_roc_auc": 0.1})
    _tamper_metrics("2", {"test_roc_auc": 0.99})
    with pytest.raises(GatesFailed) as refused:
        _promote(store, "2", S.PRODUCTION, reason="should not pass")
    gate = _gate(refused.value.report)
    assert _gate(refused.value.report, "threshold:test_roc_auc")["passed"]
    assert not gate["passed"] and "re-scored on the same test split" in gate["message"]
    # both models were scored again on version 2's test split: the true values come back
    assert gate["figures"]["production"] == pytest.approx(truth["1"], abs=1e-6)
    assert gate["figures"]["candidate"] == pytest.approx(truth["2"], abs=1e-6)
    assert gate["figures"]["production_version"] == "1"
    assert "max_drop:test_roc_auc" in str(refused.value) and "--force" in str(refused.value)
    assert store.get_model_version(MODEL, "2").stage is S.STAGING
    last = history(store, MODEL)[-1]
    assert (last.version, last.outcome, last.to_stage, last.gate_report) == (
        "2", StageOutcome.REFUSED, S.PRODUCTION, tuple(refused.value.report))


def test_a_better_candidate_passes_and_archives_production(store: SqlStore) -> None:
    _promote(store, "2", S.PRODUCTION, reason="baseline")
    done = _promote(store, "1", S.PRODUCTION, reason="better")
    gate = _gate(done.gate_report)
    assert gate["passed"] and gate["figures"]["drop"] < 0
    assert done.replaced == "2"
    assert store.get_model_version(MODEL, "2").stage is S.ARCHIVED
    outcomes = [(c.version, c.outcome) for c in history(store, MODEL)]
    assert outcomes[-2:] == [("2", StageOutcome.REPLACED), ("1", StageOutcome.PROMOTED)]


def test_force_needs_a_reason_and_is_recorded(store: SqlStore) -> None:
    _promote(store, "1", S.PRODUCTION, reason="baseline")
    with pytest.raises(PromotionError, match="needs a reason"):
        _promote(store, "2", S.PRODUCTION, force=True)
    done = _promote(store, "2", S.PRODUCTION, force=True, reason="incident: v1 misfires")
    change = done.change
    assert change.forced and change.reason == "incident: v1 misfires" and change.user == "ann"
    assert [g["passed"] for g in change.gate_report] == [True, False]
    assert store.get_model_version(MODEL, "1").stage is S.ARCHIVED
    # the history keeps the forced promotion with the gate it overrode
    assert history(store, MODEL)[-1] == change


def test_rollback_puts_the_previous_production_version_back_through_its_gates(
        store: SqlStore) -> None:
    with pytest.raises(PromotionError, match="has no version in production to roll back from"):
        rollback(store, home_artifacts(), MODEL, user="ann")
    _promote(store, "1", S.PRODUCTION, reason="baseline")
    with pytest.raises(PromotionError, match="no version held production before version 1"):
        rollback(store, home_artifacts(), MODEL, user="ann")
    _promote(store, "2", S.PRODUCTION, force=True, reason="try the one-epoch model")

    done = rollback(store, home_artifacts(), MODEL, reason="v2 misfires", user="ann")

    assert (done.change.version, done.change.from_stage, done.change.to_stage) == (
        "1", S.ARCHIVED, S.PRODUCTION)
    assert done.replaced == "2" and not done.change.forced
    assert done.change.reason == "rollback from version 2: v2 misfires"
    assert _gate(done.gate_report)["passed"]  # measured again, against version 2
    assert {v.version: v.stage for v in store.list_model_versions(MODEL).items} == {
        "1": S.PRODUCTION, "2": S.ARCHIVED}
    with pytest.raises(GatesFailed):  # back to version 2: worse than 1 by more than max_drop
        rollback(store, home_artifacts(), MODEL, reason="again", user="ann")
    assert history(store, MODEL)[-1].outcome is StageOutcome.REFUSED
    assert store.get_stage_holder(MODEL, S.PRODUCTION).version == "1"


def test_a_registration_names_who_ran_the_pipeline(store: SqlStore) -> None:
    registered = [c for c in history(store, MODEL) if c.outcome is StageOutcome.REGISTERED]
    assert [(c.version, c.user) for c in registered] == [("1", "bob"), ("2", "bob")]


def test_history_shows_a_refusal_and_a_success(store: SqlStore) -> None:
    _promote(store, "1", S.PRODUCTION, reason="baseline")
    with pytest.raises(GatesFailed):
        _promote(store, "2", S.PRODUCTION, reason="worse")
    _promote(store, "2", S.CANARY, reason="canary has no max_drop gate")
    summary = [(c.version, c.from_stage, c.to_stage, c.outcome) for c in history(store, MODEL)]
    assert summary == [
        ("1", None, S.STAGING, StageOutcome.REGISTERED),
        ("2", None, S.STAGING, StageOutcome.REGISTERED),
        ("1", S.STAGING, S.PRODUCTION, StageOutcome.PROMOTED),
        ("2", S.STAGING, S.PRODUCTION, StageOutcome.REFUSED),
        ("2", S.STAGING, S.CANARY, StageOutcome.PROMOTED),
    ]


def test_a_move_not_allowed_is_refused_before_any_gate(store: SqlStore) -> None:
    _promote(store, "1", S.PRODUCTION, reason="baseline")
    with pytest.raises(PromotionError, match="cannot move from production to canary"):
        _promote(store, "1", S.CANARY)
    with pytest.raises(PromotionError, match="cannot move from staging to none"):
        _promote(store, "2", S.NONE)
    assert len(history(store, MODEL)) == 3


def _declare(store: SqlStore, version: str, promotion: dict[str, object]) -> None:
    """Make the version's run have recorded these promotion gates in its spec (the resolved
    spec of its system entries: what the gates read)."""
    run = store.get_run(store.get_model_version(MODEL, version).run_id)
    spec = run.system["resolved_spec"]
    store.set_system(run.run_id, {"resolved_spec": {
        **spec, "registry": {**spec["registry"], "promotion": promotion}}})


def test_slice_gap_and_export_parity_gates_read_the_runs_records(store: SqlStore) -> None:
    _declare(store, "1", {"max_slice_gap": [{"metric": "roc_auc", "max": 0.1}],
                          "export_parity": True})
    with pytest.raises(GatesFailed) as refused:
        _promote(store, "1", S.CANARY)
    messages = {g["gate"]: g["message"] for g in refused.value.report}
    assert messages["max_slice_gap:roc_auc"].startswith("the run recorded no slices")
    assert "run `trainforge export`" in messages["export_parity"]
    version = store.get_model_version(MODEL, "1")
    _tamper_metrics("1", {**version.metrics, "test_slice_gap_roc_auc": 0.04})
    report = {"rows": 500, "variants": [
        {"name": "onnx-fp32", "artifact": "export/model.onnx", "accepted": True, "reason": None,
         "max_abs_diff": 2e-7, "metric_drop": None, "latency_ms_p50": 0.1, "size_bytes": 9000}]}
    home_artifacts().put_bytes(version.run_id, "export/report.json", json.dumps(report).encode())
    done = _promote(store, "1", S.CANARY, reason="slices even, export checked")
    assert {g["gate"]: g["passed"] for g in done.gate_report} == {
        "threshold:test_roc_auc": True, "max_slice_gap:roc_auc": True, "export_parity": True}


def test_gates_are_read_from_what_the_run_recorded_not_from_params_logged_over_it(
        store: SqlStore) -> None:
    run = store.get_run(store.get_model_version(MODEL, "1").run_id)
    store.log_params(run.run_id, {"registry": {**run.params["registry"], "promotion": {
        "max_slice_gap": [{"metric": "roc_auc", "max": 0.1}], "export_parity": True}}})
    done = _promote(store, "1", S.CANARY, reason="the spec it ran declares no such gates")
    assert {g["gate"] for g in done.gate_report} == {"threshold:test_roc_auc"}


def test_staging_from_none_rechecks_the_thresholds(store: SqlStore) -> None:
    version = store.get_model_version(MODEL, "2")
    store.create_model_version(MODEL, version.run_id, version.artifact_uri, S.NONE,
                               {"test_roc_auc": 0.5})
    refused = f"threshold:test_roc_auc: test_roc_auc >= {MIN_AUC}: got 0.5"
    with pytest.raises(GatesFailed, match=refused):
        _promote(store, "3", S.STAGING)


def test_aliases_lineage_and_diff(store: SqlStore) -> None:
    assert set_alias(store, MODEL, "champion", "1").version == "1"
    with pytest.raises(ValueError, match="not a stage's name"):
        set_alias(store, MODEL, "production", "1")
    with pytest.raises(NotFound, match="has no version in production"):
        resolve_version(store, MODEL, "production")
    found = lineage(store, resolve_version(store, MODEL, "champion"))
    run = store.get_run(found["run_id"])
    assert found["aliases"] == ["champion"]
    assert found["features_hash"] == run.tags["features"]["hash"]
    assert found["data_version"]["id"] == run.data_version_id
    assert found["data_version"]["rows"] == 24_000
    assert found["environment"]["torch"] == run.environment["torch"]
    assert found["git_commit"] == run.git_commit and found["parent_runs"] == []
    compared = diff(store, store.get_model_version(MODEL, "1"),
                    store.get_model_version(MODEL, "2"))
    assert compared["params"] == {"training.epochs": [2, 1], "training.seed": [0, 5]}
    assert compared["metrics"]["test_roc_auc"] == [_stored_auc(store, "1"),
                                                   _stored_auc(store, "2")]
    assert compared["lineage"]["features_hash"][0] == compared["lineage"]["features_hash"][1]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from serve([200])


def test_a_promotion_is_announced_to_webhooks(store: SqlStore, receiver: Receiver) -> None:
    subscribe(store, receiver.url, ["model.stage_changed", "model.promotion_refused"],
              "HOOK_SECRET")
    _promote(store, "2", S.PRODUCTION, reason="first")
    _promote(store, "1", S.PRODUCTION, reason="better")
    _promote(store, "2", S.STAGING, reason="restore")
    with pytest.raises(GatesFailed):
        _promote(store, "2", S.PRODUCTION, reason="worse")
    assert receiver.received == [], "a promotion sends nothing itself"
    done = Deliverer(store, {"HOOK_SECRET": SECRET}).run_once()
    assert (done.attempts, done.delivered) == (5, 5)
    events = [(body["event"], body["data"]["version"], body["data"]["to"], signed)
              for body, signed, _ in receiver.received]
    assert events == [
        ("model.stage_changed", "2", "production", True),
        ("model.stage_changed", "2", "archived", True),
        ("model.stage_changed", "1", "production", True),
        ("model.stage_changed", "2", "staging", True),
        ("model.promotion_refused", "2", "production", True),
    ]
    refused = receiver.received[-1][0]["data"]
    assert refused["outcome"] == "refused" and not _gate(refused["gates"])["passed"]


def test_a_promotion_returns_whatever_its_receiver_does(store: SqlStore) -> None:
    hung = Receiver([200])  # accepts connections, never answers: nothing serves it
    try:
        subscribe(store, hung.url, ["model.stage_changed"], "HOOK_SECRET")
        done = _promote(store, "2", S.PRODUCTION, reason="first")
    finally:
        hung.server_close()
    assert done.change.to_stage is S.PRODUCTION
    [queued] = store.list_event_deliveries().items
    assert queued.state.value == "pending" and queued.event.stage_change == done.change
    assert store.list_deliveries().items == (), "no attempt was made by the promotion"
