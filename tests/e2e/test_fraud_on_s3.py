"""The fraud pipeline with `TRAINFORGE_ARTIFACTS=s3://...`: a whole run's files land in the bucket.

S3 is moto's server on loopback, reached the way a user reaches S3: credentials and endpoint
from the AWS variables only (`s3_bucket` sets them), no storage options anywhere.
"""

import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from home import home_artifacts, home_store
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.config import load_spec
from trainforge.ingest import read_table
from trainforge.pipeline import run_pipeline
from trainforge.split import split_frame

boto3 = pytest.importorskip("boto3")
FAST = ["training.epochs=2"]


def test_artifacts_weights_and_checkpoints_go_to_s3(fraud_project, s3_bucket, monkeypatch):
    monkeypatch.setenv("TRAINFORGE_ARTIFACTS", f"s3://{s3_bucket}/team/artifacts")
    result = run_pipeline(fraud_project / "pipeline.yaml", FAST)
    run = home_store().get_run(result.run.run_id)
    run_uri = f"s3://{s3_bucket}/team/artifacts/{run.run_id}"
    assert run.artifact_uri == run_uri
    assert run.system["checkpoint"]["location"] == f"{run_uri}/checkpoints"
    assert result.model_version.artifact_uri == f"{run_uri}/model"

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    listed = client.list_objects_v2(Bucket=s3_bucket, Prefix=f"team/artifacts/{run.run_id}/")
    keys = {item["Key"].split(f"{run.run_id}/", 1)[1] for item in listed["Contents"]}
    steps = int(run.metrics["train_steps"])
    plots = {f"evaluation/plots/{name}.png" for name in (
        "calibration", "confusion_matrix", "pr", "roc", "slice_country", "slice_device_type")}
    checkpoints = {f"checkpoints/step-{step:010d}/{name}" for step in (steps // 2, steps)
                   for name in ("MANIFEST.json", "state.json", "tensors.safetensors")}
    assert keys == {"features/pipeline.json", "model/model.json", "model/weights.safetensors",
                    "validation/report.json", "evaluation/test.parquet",
                    "evaluation/report.json", "data/profile.json", *plots, *checkpoints}
    weights = client.get_object(Bucket=s3_bucket,
                                Key=f"team/artifacts/{run.run_id}/model/weights.safetensors")
    assert home_artifacts().get_bytes(run.run_id, "model/weights.safetensors") == (
        weights["Body"].read())
    assert not (Path(os.environ["TRAINFORGE_HOME"]) / "artifacts").exists()

    shown = CliRunner().invoke(app, ["checkpoints", "list", run.run_id, "--json"])
    assert shown.exit_code == 0, shown.output
    assert [(c["step"], c["uri"]) for c in json.loads(shown.stdout)] == [
        (step, f"{run_uri}/checkpoints/step-{step:010d}") for step in (steps // 2, steps)]


def test_the_fraud_demo_streams_its_data_from_s3(fraud_project, s3_bucket, monkeypatch):
    """`data.streaming: true` with the data in the bucket: row groups read from S3 while
    training, the same data version and the same test rows as the files read in memory, a
    registered model."""
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    local = sorted((fraud_project / "data").glob("*.parquet"))
    for path in local:
        client.upload_file(str(path), s3_bucket, f"fraud/data/{path.name}")
    monkeypatch.setenv("TRAINFORGE_ARTIFACTS", f"s3://{s3_bucket}/team/artifacts")
    result = run_pipeline(fraud_project / "pipeline.yaml", [
        *FAST, f"data.source=s3://{s3_bucket}/fraud/data/*.parquet", "data.streaming=true",
        "data.shuffle_rows=2048"])
    run = home_store().get_run(result.run.run_id)
    assert run.status == "completed"
    assert run.tags["data"]["streaming"] is True
    in_memory = read_table(str(fraud_project / "data" / "*.parquet"))
    assert run.data_version_id == in_memory.fingerprint
    spec = load_spec(fraud_project / "pipeline.yaml")
    expected = split_frame(in_memory.frame, spec.data.split).test
    golden = pd.read_parquet(io.BytesIO(home_artifacts().get_bytes(
        run.run_id, "evaluation/test.parquet")))
    assert sorted(golden["transaction_id"]) == sorted(expected["transaction_id"])
    assert run.metrics["test_roc_auc"] > 0.85
    assert result.model_version is not None and result.model_version.version == "1"
