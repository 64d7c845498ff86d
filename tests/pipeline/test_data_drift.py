"""Each run profiles its data (stored beside the data version; files profiled once) and, with
`data.drift`, compares it with a reference profile: a named data version, or the data of the
model's production version."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from home import home_store
from webhook_receiver import SECRET, Receiver, serve

from trainforge.entities import ModelStage
from trainforge.errors import DataDriftError, RunFailed
from trainforge.events import Deliverer, subscribe
from trainforge.pipeline import run_pipeline
from trainforge.profiles._stored import load_profile

FAST = ["training.epochs=1", "registry=null"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from serve([200])


def _shift_amounts(project: Path, factor: float) -> None:
    for path in sorted((project / "data").glob("*.parquet")):
        frame = pd.read_parquet(path)
        frame["amount"] = (frame["amount"] * factor).clip(upper=25_000)
        frame.to_parquet(path)


def test_runs_store_profiles_and_profile_each_file_once(fraud_project: Path) -> None:
    """The second run splits otherwise, so its data steps are not taken from the first's
    cache: it profiles again, and finds every file's profile stored."""
    first = run_pipeline(fraud_project / "pipeline.yaml", FAST)
    again = run_pipeline(fraud_project / "pipeline.yaml", [*FAST, "data.split.seed=7"])
    day = sorted((fraud_project / "data").glob("*.parquet"))[-1]
    pd.read_parquet(day).head(50).to_parquet(fraud_project / "data" / "transactions-2026-02-01"
                                              ".parquet")
    grown = run_pipeline(fraud_project / "pipeline.yaml", FAST)

    store = home_store()
    tags = [store.get_run(r.run.run_id).tags["profile"] for r in (first, again, grown)]
    assert [(t["files"], t["files_profiled"]) for t in tags] == [(6, 6), (6, 0), (7, 1)]
    profile = load_profile(store, grown.run.data_version_id or "")
    assert profile is not None and profile.rows == 24_050
    assert profile.columns["amount"].count == 24_050


def test_drift_from_a_named_version_fails_the_run_and_alerts(
    fraud_project: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = run_pipeline(fraud_project / "pipeline.yaml", FAST).run.data_version_id
    _shift_amounts(fraud_project, 3.0)
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    subscribe(home_store(), receiver.url, ["data.drift_detected"], "HOOK_SECRET")

    with pytest.raises(RunFailed) as failed:
        run_pipeline(fraud_project / "pipeline.yaml",
                     [*FAST, f"data.drift.reference={reference}", "data.drift.on_drift=fail"])

    assert isinstance(failed.value.__cause__, DataDriftError)
    assert "amount: psi" in str(failed.value.__cause__)
    run = home_store().get_run(failed.value.run_id)
    assert run.tags["drift"]["drifted"] and "amount" in run.tags["drift"]["columns"]
    assert run.tags["drift"]["reference"] == reference
    assert receiver.received == [], "the run sent nothing itself"
    Deliverer(home_store(), {"HOOK_SECRET": SECRET}).run_once()
    [(body, signed, _)] = receiver.received
    assert signed and body["event"] == "data.drift_detected"
    assert body["data"]["report"]["reference"] == reference


def test_the_production_models_data_is_the_default_reference(
    fraud_project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = fraud_project / "pipeline.yaml"
    with caplog.at_level(logging.WARNING, logger="trainforge"):
        unchecked = run_pipeline(spec, [*FAST, "data.drift.model=fraud_detector"])
    store = home_store()
    assert store.get_run(unchecked.run.run_id).tags["drift"] == {
        "checked": False,
        "reason": "model 'fraud_detector' has no production version with a data version yet"}
    assert any("drift: not checked" in r.getMessage() for r in caplog.records)
    version = store.create_model_version("fraud_detector", unchecked.run.run_id, "file:///m",
                                         ModelStage.STAGING, {},
                                         data_version_id=unchecked.run.data_version_id)
    store.change_stage("fraud_detector", version.version, ModelStage.PRODUCTION,
                       expected_from=ModelStage.STAGING, expected_holder=None, user="ann",
                       reason="test")

    same = run_pipeline(spec, [*FAST, "data.drift.model=fraud_detector"])
    _shift_amounts(fraud_project, 3.0)
    shifted = run_pipeline(spec, [*FAST, "data.drift.model=fraud_detector"])

    same_tag = store.get_run(same.run.run_id).tags["drift"]
    shifted_tag = store.get_run(shifted.run.run_id).tags["drift"]
    assert (same_tag["checked"], same_tag["drifted"]) == (True, False)
    assert same_tag["reference"] == unchecked.run.data_version_id
    assert (shifted_tag["drifted"], shifted_tag["columns"]) == (True, ["amount"])


def test_bad_drift_settings_name_the_field(fraud_project: Path) -> None:
    reference = run_pipeline(fraud_project / "pipeline.yaml", FAST).run.data_version_id

    with pytest.raises(RunFailed, match=r"data.drift.reference: data version 'nope'"):
        run_pipeline(fraud_project / "pipeline.yaml", [*FAST, "data.drift.reference=nope"])
    with pytest.raises(RunFailed, match=r"drift.thresholds.nope: no column 'nope'"):
        run_pipeline(fraud_project / "pipeline.yaml",
                     [*FAST, f"data.drift.reference={reference}",
                      "data.drift.thresholds={nope: {psi: 0.1}}"])


def test_drift_without_profiles_is_a_spec_error(fraud_project: Path) -> None:
    from trainforge.errors import SpecError

    with pytest.raises(SpecError, match=r"data: .*drift compares profiles: it needs profile"):
        run_pipeline(fraud_project / "pipeline.yaml",
                     [*FAST, "data.profile=false", "data.drift.model=fraud_detector"])
