"""Registered pipelines from the command line: `pipelines register SPEC --id ID`, `pipelines
list`, `pipelines show ID`, and `pipelines resolve ID --config FILE`, which prints what a
submission would run or exits 2 naming each key it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner, Result

from trainforge.cli import app


def invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, ["pipelines", *args], input=stdin)


def _registered(fraud_project: Path) -> Path:
    spec = fraud_project / "pipeline.yaml"
    result = invoke("register", str(spec), "--id", "fraud_model_v2")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("registered pipeline fraud_model_v2 (spec fraud, 9 steps)")
    return spec


def test_a_registered_pipeline_is_listed_shown_and_resolves_a_submission(
    fraud_project: Path, tmp_path: Path,
) -> None:
    _registered(fraud_project)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hyperparams": {"lr": 0.01, "epochs": 2},
                                  "resources": {"gpus": 4, "memory": "64Gi"}}))

    listed = json.loads(invoke("list", "--json").stdout)
    shown = json.loads(invoke("show", "fraud_model_v2", "--json").stdout)
    resolved = json.loads(invoke("resolve", "fraud_model_v2", "--config", str(config),
                                 "--json").stdout)
    from_stdin = invoke("resolve", "fraud_model_v2", "--config", "-", stdin=config.read_text())

    assert [(p["pipeline_id"], p["name"]) for p in listed] == [("fraud_model_v2", "fraud")]
    assert shown["settable"] == ["data_source", "model_type", "hyperparams.lr",
                                 "hyperparams.epochs", "hyperparams.batch_size", "resources"]
    assert shown["spec"]["training"]["optimizer"]["lr"] == 0.002 and shown["created_by"]
    assert resolved == {"pipeline_id": "fraud_model_v2",
                        "sets": {"training.optimizer.lr": 0.01, "training.epochs": 2},
                        "overrides": ["training.optimizer.lr=0.01", "training.epochs=2"],
                        "resources": {"gpus": 4, "memory": "64Gi", "labels": []}}
    assert from_stdin.exit_code == 0 and "training.optimizer.lr=0.01" in from_stdin.stdout


def test_a_refused_submission_exits_2_naming_each_key(fraud_project: Path,
                                                      tmp_path: Path) -> None:
    _registered(fraud_project)
    result = invoke("resolve", "fraud_model_v2", "--config", "-",
                    stdin='{"hyperparams": {"lr": 0.01, "depth": 8}}')
    not_json = invoke("resolve", "fraud_model_v2", "--config", "-", stdin="lr: 0.01")
    missing = invoke("resolve", "fraud_model_v2", "--config", str(tmp_path / "none.json"))

    assert result.exit_code == 2
    assert ("config.hyperparams.depth: pipeline 'fraud_model_v2' maps no hyperparameter of "
            "this name; it maps: batch_size, epochs, lr") in result.stderr
    assert not_json.exit_code == 2 and "--config stdin: not JSON" in not_json.stderr
    assert missing.exit_code == 2
    assert f"--config {tmp_path / 'none.json'}: file not found" in missing.stderr


def test_another_spec_under_a_registered_id_exits_1_with_how_to_replace_it(
    fraud_project: Path,
) -> None:
    spec = _registered(fraud_project)
    document = yaml.safe_load(spec.read_text())
    document["training"]["epochs"] = 9
    spec.write_text(yaml.safe_dump(document))

    refused = invoke("register", str(spec), "--id", "fraud_model_v2")
    replaced = invoke("register", str(spec), "--id", "fraud_model_v2", "--replace")

    assert refused.exit_code == 1
    assert "'fraud_model_v2' is registered with another spec" in refused.stderr
    assert f"trainforge pipelines register {spec} --id fraud_model_v2 --replace" in (
        refused.stderr)
    assert replaced.exit_code == 0, replaced.output
    shown = json.loads(invoke("show", "fraud_model_v2", "--json").stdout)
    assert shown["spec"]["training"]["epochs"] == 9


def test_a_bad_spec_or_id_exits_2_and_creates_nothing(fraud_project: Path,
                                                      _isolated_home: Path) -> None:
    spec = fraud_project / "pipeline.yaml"
    document = yaml.safe_load(spec.read_text())
    document["submit"]["hyperparams"]["lr"] = "training.optimiser.lr"
    broken = fraud_project / "broken.yaml"
    broken.write_text(yaml.safe_dump(document))

    bad_spec = invoke("register", str(broken), "--id", "fraud_model_v2")
    bad_id = invoke("register", str(spec), "--id", "../up")

    assert bad_spec.exit_code == 2
    assert "submit.hyperparams.lr: 'training.optimiser.lr' is no field of this spec" in (
        bad_spec.stderr)
    assert bad_id.exit_code == 2 and "--id '../up': expected 1 to 64 letters" in bad_id.stderr
    assert not (_isolated_home / "trainforge.db").exists()  # no database made for a refusal


def test_an_unknown_pipeline_exits_1_and_a_missing_database_is_named(
    fraud_project: Path,
) -> None:
    no_database = invoke("list")
    _registered(fraud_project)
    unknown = invoke("show", "nope")

    assert no_database.exit_code == 1 and "TRAINFORGE_HOME" in no_database.stderr
    assert unknown.exit_code == 1
    assert "pipeline 'nope' not found; see: trainforge pipelines list" in unknown.stderr
