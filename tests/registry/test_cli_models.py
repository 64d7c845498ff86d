"""The registry from the command line, as a user runs it (real processes, stdout piped): the
fraud demo registers a version, which goes to canary and then production; a worse version is
refused; history, lineage, diff, aliases; webhooks subscribed and their deliveries listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from webhook_receiver import SECRET, Receiver, serve

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOOK_SECRET": SECRET}
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def ok(*args: str, cwd: Path | None = None) -> str:
    done = cli(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from serve([200])


@pytest.mark.slow
def test_demo_version_goes_to_canary_then_production_and_a_worse_one_is_refused(
    registry_home: Path, receiver: Receiver
) -> None:
    ok("webhooks", "add", receiver.url, "--events", "model.stage_changed",
       "--secret-env", "HOOK_SECRET")
    ran = json.loads(ok("run", "project/pipeline.yaml", "training.epochs=2", "--json",
                        cwd=registry_home))
    assert (ran["model_version"], ran["stage"]) == ("fraud_detector/3", "staging")

    canary = json.loads(ok("models", "promote", "fraud_detector", "3", "--to", "canary",
                           "--reason", "shadow 5% of traffic", "--json"))
    assert (canary["from"], canary["to"], canary["user"]) == ("staging", "canary", "ann")
    delivered = json.loads(ok("webhooks", "deliver", "--json"))
    assert delivered["delivered"] == 1
    shown = ok("models", "promote", "fraud_detector@canary", "--to", "production",
               "--reason", "canary held for a day")
    assert "fraud_detector version 3 -> production" in shown
    assert "pass  max_drop:test_roc_auc: no production version to compare with" in shown

    refused = cli("models", "promote", "fraud_detector", "2", "--to", "production",
                  "--reason", "try the one-epoch model")
    assert refused.returncode == 3
    assert "promotion to production refused by 1 gate(s)" in refused.stderr
    assert "max_drop:test_roc_auc: test_roc_auc" in refused.stderr
    no_reason = cli("models", "promote", "fraud_detector", "2", "--to", "production", "--force")
    assert no_reason.returncode == 2 and "needs a reason" in no_reason.stderr
    not_allowed = cli("models", "promote", "fraud_detector", "3", "--to", "canary")
    assert not_allowed.returncode == 2
    assert "cannot move from production to canary" in not_allowed.stderr

    history = json.loads(ok("models", "history", "fraud_detector", "--json"))
    assert [(h["version"], h["from"], h["to"], h["outcome"]) for h in history[2:]] == [
        ("3", None, "staging", "registered"),
        ("3", "staging", "canary", "promoted"),
        ("3", "canary", "production", "promoted"),
        ("2", "staging", "production", "refused"),
    ]
    assert history[-1]["gates"].startswith("1/2 passed; failed: max_drop:test_roc_auc")
    assert {h["user"] for h in history[3:]} == {"ann"}
    table = ok("models", "history", "fraud_detector")
    assert "refused" in table and "canary held for a day" in table

    ok("models", "alias", "fraud_detector", "champion", "production")
    lineage = json.loads(ok("models", "lineage", "fraud_detector@champion", "--json"))
    assert (lineage["version"], lineage["stage"], lineage["aliases"]) == (
        "3", "production", ["champion"])
    assert lineage["run_id"] == ran["run_id"] and len(lineage["features_hash"]) == 64
    compared = json.loads(ok("models", "diff", "fraud_detector", "2", "champion", "--json"))
    assert compared["versions"] == ["2", "3"]
    training = {k: v for k, v in compared["params"].items() if k.startswith("training.")}
    assert training == {"training.epochs": [1, 2], "training.seed": [5, 0]}
    # the demo ran from a copy of the project: its data paths differ, and the diff says so; it
    # also records slices and plots, which the fixture's versions turn off
    assert set(compared["params"]) - set(training) == {
        "data.source", "data.contract", "evaluation.slices", "evaluation.plots"}
    assert "version 2" in ok("models", "diff", "fraud_detector", "2", "3")

    ok("webhooks", "deliver")
    events = [(body["data"]["version"], body["data"]["to"], signed)
              for body, signed, _ in receiver.received]
    assert events == [("3", "canary", True), ("3", "production", True)]
    deliveries = json.loads(ok("webhooks", "deliveries", "--json"))
    assert [(d["attempt"], d["status"], d["delivered"]) for d in deliveries] == [
        (1, 200, True), (1, 200, True)]
    assert "HOOK_SECRET" in ok("webhooks", "list") and SECRET not in ok("webhooks", "list")


@pytest.mark.slow
def test_unknown_models_versions_and_aliases_exit_1(registry_home: Path) -> None:
    missing = cli("models", "history", "nope")
    assert missing.returncode == 1 and "model 'nope' not found" in missing.stderr
    no_version = cli("models", "lineage", "fraud_detector", "9")
    assert no_version.returncode == 1 and "version '9' not found" in no_version.stderr
    no_alias = cli("models", "lineage", "fraud_detector@best")
    assert no_alias.returncode == 1 and "has no alias 'best'" in no_alias.stderr
    twice = cli("models", "lineage", "fraud_detector@production", "1")
    assert twice.returncode == 2 and "give the version once" in twice.stderr
    bad_alias = cli("models", "alias", "fraud_detector", "canary", "1")
    assert bad_alias.returncode == 2 and "not a stage's name" in bad_alias.stderr
    no_production = cli("models", "rollback", "fraud_detector")
    assert no_production.returncode == 2
    assert "has no version in production to roll back from" in no_production.stderr
    bad_hook = cli("webhooks", "add", "ftp://x", "--events", "model.stage_changed",
                   "--secret-env", "S")
    assert bad_hook.returncode == 2 and "expected http(s)://host" in bad_hook.stderr
