"""`trainforge checkpoints list / gc --spec SPEC`: a run whose checkpoints live on S3 that only
the spec's `training.checkpoint.storage_options` open (no AWS variables; credentials are never
recorded with the run) is listed and pruned with the spec given again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.pipeline import run_pipeline


def invoke(*args: str):
    return CliRunner().invoke(app, ["checkpoints", *args])


@pytest.fixture
def run_on_s3(fraud_project: Path, s3_bucket_needing_options: str,
              s3_options: dict[str, Any]) -> tuple[str, Path, str]:
    """(run id, the spec, the run's checkpoint location) of a run checkpointing to S3."""
    spec = yaml.safe_load((fraud_project / "pipeline.yaml").read_text())
    spec["training"]["checkpoint"] = {"location": f"s3://{s3_bucket_needing_options}/ckpt",
                                      "storage_options": s3_options, "keep_last": None}
    path = fraud_project / "on_s3.yaml"
    path.write_text(yaml.safe_dump(spec))
    run = run_pipeline(path, ["training.epochs=2"]).run
    assert "secret" not in json.dumps(run.system["checkpoint"])
    return run.run_id, path, f"s3://{s3_bucket_needing_options}/ckpt/{run.run_id}"


def test_the_specs_storage_options_open_a_location_the_environment_cannot(run_on_s3) -> None:
    run_id, spec, location = run_on_s3
    refused = invoke("list", run_id)
    assert refused.exit_code == 1, refused.output
    assert f"run {run_id}: cannot read its checkpoints at {location}: NoCredentialsError" in (
        refused.output)
    assert "--spec SPEC" in refused.output

    listed = invoke("list", run_id, "--json", "--spec", str(spec))
    assert listed.exit_code == 0, listed.output
    steps = [c["step"] for c in json.loads(listed.stdout)]
    assert len(steps) == 2
    assert all(c["uri"].startswith(f"{location}/step-") for c in json.loads(listed.stdout))

    pruned = invoke("gc", run_id, "--keep-last", "1", "--json", "--spec", str(spec))
    assert pruned.exit_code == 0, pruned.output
    assert [d["step"] for d in json.loads(pruned.stdout)] == steps[:1]
    left = invoke("list", run_id, "--json", "--spec", str(spec))
    assert [c["step"] for c in json.loads(left.stdout)] == steps[1:]


def test_a_spec_naming_another_location_or_none_is_refused(run_on_s3, fraud_project) -> None:
    run_id, _, location = run_on_s3
    other = invoke("list", run_id, "--spec", str(fraud_project / "pipeline.yaml"))
    assert other.exit_code == 1
    assert f"run {run_id} saved its checkpoints under {location!r}" in other.output
    assert "training.checkpoint.location names None" in other.output

    missing = invoke("gc", run_id, "--spec", str(fraud_project / "nope.yaml"))
    assert missing.exit_code == 2 and "nope.yaml" in missing.output


def test_the_credentials_file_opens_a_location_without_the_spec(
        run_on_s3, s3_options: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A team keeps its storage options in one file (TRAINFORGE_CREDENTIALS), by location:
    the run's checkpoints are listed and pruned without its spec."""
    run_id, _, location = run_on_s3
    bucket_root = location.rsplit("/", 2)[0]  # s3://bucket: the run's location lies under it
    credentials = tmp_path / "credentials.yaml"
    credentials.write_text(yaml.safe_dump({"locations": {bucket_root: s3_options}}))
    monkeypatch.setenv("TRAINFORGE_CREDENTIALS", str(credentials))
    listed = invoke("list", run_id, "--json")
    assert listed.exit_code == 0, listed.output
    steps = [c["step"] for c in json.loads(listed.stdout)]
    assert len(steps) == 2
    pruned = invoke("gc", run_id, "--keep-last", "1", "--json")
    assert [d["step"] for d in json.loads(pruned.stdout)] == steps[:1]

    credentials.write_text(yaml.safe_dump({"locations": {bucket_root: "key=AKIA"}}))
    broken = invoke("list", run_id)
    assert broken.exit_code == 2
    assert f"{credentials}: locations.{bucket_root}: expected a mapping of storage " \
        "options" in broken.output
    assert "AKIA" not in broken.output
