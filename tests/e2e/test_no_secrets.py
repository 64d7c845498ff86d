"""Secrets planted in a spec's storage options (the data's on S3 and the checkpoints'), on the
command line, in the database URL and in a webhook's signing-secret variable reach no record:
not the database, not an artifact, not a log line, not `runs show`, not the webhook log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sqlalchemy import create_engine, inspect, text

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
KEY, SECRET, DB_PASSWORD = "AKIDPLANTEDKEY0001", "planted-s3-secret-x9", "planted-db-password-y8"
HOOK_SECRET = "planted-webhook-secret-w3"
PLANTED = (KEY, SECRET, DB_PASSWORD, HOOK_SECRET)


def with_password(url: str) -> str:
    user, _, rest = url.partition("@")
    return f"{user}:{DB_PASSWORD}@{rest}"


def database_text(url: str) -> str:
    """Every row of every table, as JSON text."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return "\n".join(
                str(row[0]) for table in inspect(connection).get_table_names()
                for row in connection.execute(text(f'SELECT row_to_json(t)::text FROM "{table}" t'))
            )
    finally:
        engine.dispose()


def files_text(folder: Path) -> str:
    return "\n".join(path.read_bytes().decode("latin-1") for path in folder.rglob("*")
                     if path.is_file())


@pytest.mark.slow
@pytest.mark.postgres
def test_no_planted_secret_reaches_a_record(fraud_project, pg_url, s3_bucket, s3_endpoint,
                                            _isolated_home, monkeypatch):
    import s3fs

    uploader = s3fs.S3FileSystem(key="k", secret="s", client_kwargs={"endpoint_url": s3_endpoint})
    uploader.put(str(fraud_project / "data") + "/", f"{s3_bucket}/data/", recursive=True)
    spec = yaml.safe_load((fraud_project / "pipeline.yaml").read_text())
    endpoint = {"endpoint_url": s3_endpoint, "region_name": "us-east-1"}
    spec["data"]["source"] = f"s3://{s3_bucket}/data/transactions-*.parquet"
    spec["data"]["storage_options"] = {"key": KEY, "client_kwargs": endpoint}
    spec["training"]["checkpoint"] = {
        "location": f"s3://{s3_bucket}/checkpoints", "every_n_steps": 20,
        "storage_options": {"key": KEY, "client_kwargs": {"endpoint_url": s3_endpoint,
                                                          "region_name": "us-east-1"}},
    }
    (fraud_project / "pipeline.yaml").write_text(yaml.safe_dump(spec))
    env = {**os.environ, "TRAINFORGE_DB": with_password(pg_url),
           # what `checkpoints list` authenticates with afterwards: the run recorded none
           "AWS_ACCESS_KEY_ID": "from-env", "AWS_SECRET_ACCESS_KEY": "from-env",
           "TF_HOOK_SECRET": HOOK_SECRET}

    def cli(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, env=env,
                              cwd=fraud_project)
        assert done.returncode == 0, done.stderr
        return done

    # a receiver that is not there: every attempt is logged, with its error
    hooked = cli("webhooks", "add", "http://127.0.0.1:9/hook", "--events", "model.stage_changed",
                 "--secret-env", "TF_HOOK_SECRET")
    ran = cli("run", "pipeline.yaml", "training.epochs=1",
              f"training.checkpoint.storage_options.secret={SECRET}",
              f"data.storage_options.secret={SECRET}", "--json")
    run_id = json.loads(ran.stdout)["run_id"]
    outputs = [ran.stdout, ran.stderr, hooked.stdout, hooked.stderr]
    for args in (["models", "promote", "fraud_detector", "1", "--to", "canary", "--reason", "r"],
                 ["webhooks", "deliver"], ["webhooks", "list"], ["webhooks", "deliveries"],
                 ["models", "history", "fraud_detector", "--json"],
                 ["runs", "show", run_id, "--json"], ["runs", "show", run_id],
                 ["runs", "list"], ["checkpoints", "list", run_id, "--json"]):
        done = cli(*args)
        outputs += [done.stdout, done.stderr]
    assert json.loads(outputs[-2]), "the checkpoints are listed with credentials from the env"

    assert "ConnectError" in outputs[10], "the deliveries were attempted and logged"
    shown = json.loads(outputs[14])
    assert shown["params"]["training"]["checkpoint"]["storage_options"] == {
        "client_kwargs": endpoint}
    assert shown["params"]["data"]["storage_options"] == {"client_kwargs": endpoint}
    records = {
        "database": database_text(pg_url),
        "artifacts and local state": files_text(_isolated_home),
        "cli output": "\n".join(outputs),
    }
    assert "training.checkpoint.storage_options.secret=***" in records["database"]
    assert "data.storage_options.secret=***" in records["database"]
    assert f"s3://{s3_bucket}/data/transactions-" in records["database"], \
        "the run's data version names the files it read on S3"
    for where, content in records.items():
        for planted in PLANTED:
            assert planted not in content, f"{planted!r} found in the {where}"
