"""Data that breaks its contract fires an alert: a warning in the log and an event in the
outbox, which a deliverer sends as a signed POST to the webhooks subscribed to
`data.validation_failed`, whether the run stops or goes on."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from home import home_store
from webhook_receiver import SECRET, Receiver, serve

from trainforge.errors import RunFailed
from trainforge.events import Deliverer, subscribe
from trainforge.pipeline import run_pipeline


def _deliver(receiver: Receiver) -> None:
    """The run sent nothing itself; a deliverer sends what it wrote to the outbox."""
    assert receiver.received == []
    Deliverer(home_store(), {"HOOK_SECRET": SECRET}).run_once()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from serve([200])


def _tighten(project: Path) -> None:
    contract = yaml.safe_load((project / "contract.yaml").read_text())
    contract["columns"]["amount"]["max"] = 100
    (project / "contract.yaml").write_text(yaml.safe_dump(contract))


def test_a_broken_contract_posts_a_signed_alert_and_logs_it(
    fraud_project: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _tighten(fraud_project)
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    subscribe(home_store(), receiver.url, ["data.validation_failed"], "HOOK_SECRET")

    with caplog.at_level(logging.WARNING, logger="trainforge"), pytest.raises(RunFailed) as failed:
        run_pipeline(fraud_project / "pipeline.yaml")

    _deliver(receiver)
    [(body, signed, headers)] = receiver.received
    assert signed and headers["X-Trainforge-Event"] == "data.validation_failed"
    data = body["data"]
    assert data["run_id"] == failed.value.run_id
    assert data["source"].endswith("transactions-*.parquet")
    assert data["data_version_id"] == home_store().get_run(data["run_id"]).data_version_id
    assert data["summary"].endswith("schema contract: 1 violation in 24000 rows")
    [violation] = data["report"]["violations"]
    assert (violation["column"], violation["rule"]) == ("amount", "max")
    assert violation["first_rows"][0].startswith("transactions-2026-01-0")
    assert any(r.getMessage().startswith("alert data.validation_failed: ")
               for r in caplog.records)


def test_a_passing_contract_sends_nothing(fraud_project: Path, receiver: Receiver,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    subscribe(home_store(), receiver.url, ["data.validation_failed"], "HOOK_SECRET")

    run_pipeline(fraud_project / "pipeline.yaml", ["training.epochs=1", "registry=null"])

    _deliver(receiver)
    assert receiver.received == []


def test_quarantine_sets_the_offending_rows_aside_and_the_run_goes_on(
    fraud_project: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd
    from home import home_artifacts

    _tighten(fraud_project)
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    subscribe(home_store(), receiver.url, ["data.validation_failed"], "HOOK_SECRET")
    data = pd.concat([pd.read_parquet(p) for p in sorted((fraud_project / "data").iterdir())])
    over = int((data["amount"] > 100).sum())

    with pytest.warns(UserWarning, match=rf"{over} row\(s\) set aside"):
        result = run_pipeline(fraud_project / "pipeline.yaml",
                              ["training.epochs=1", "registry=null", "data.on_fail=quarantine"])

    run = home_store().get_run(result.run.run_id)
    assert run.tags["validation"] == {"passed": False, "violations": 1, "quarantined": over}
    quarantined = pd.read_parquet(home_artifacts().open(run.run_id,
                                                        "validation/quarantine.parquet"))
    assert len(quarantined) == over and (quarantined["amount"] > 100).all()
    first = quarantined["_source_row"].iloc[0]
    file, _, row = first.partition(" row ")
    located = pd.read_parquet(fraud_project / "data" / file).iloc[int(row) - 1]
    assert located["transaction_id"] == quarantined["transaction_id"].iloc[0]
    golden = pd.read_parquet(home_artifacts().open(run.run_id, "evaluation/test.parquet"))
    assert len(golden) > 0 and (golden["amount"] <= 100).all(), "later steps got the rest"
    _deliver(receiver)
    [(body, _, _)] = receiver.received
    assert body["data"]["run_id"] == run.run_id
