"""Data that breaks its contract fires an alert: a warning in the log and a signed POST to the
webhooks subscribed to `data.validation_failed`, whether the run stops or goes on."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from home import home_store
from webhook_receiver import SECRET, Receiver, serve

from trainforge.errors import RunFailed
from trainforge.events import subscribe
from trainforge.pipeline import run_pipeline


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

    assert receiver.received == []
