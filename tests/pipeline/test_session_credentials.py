"""Storage options are a session's, never the process's: two pipeline runs in one process read
one S3 source, named alike in both specs but reached through different options (two servers
behind one bucket name), and each reads its own, wherever its steps run. A step declared with
a timeout runs in a process of its own and decodes the streamed source's plan there, with the
credentials its run's session hands the value store."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.exceptions import EndpointConnectionError
from home import home_store

from trainforge.orchestration import step, value_store
from trainforge.orchestration.cache import stored_refs
from trainforge.pipeline import PipelineResult, run_pipeline
from trainforge.session import Session

STREAMING = ["data.streaming=true", "data.shuffle_rows=4096", "training.epochs=1"]


@step(outputs=["rows_read"], timeout=120)
def rows_read(read: Any) -> int:
    """The rows of every row group of the streamed source, read where this step runs."""
    plan = read.plan
    return sum(plan.read(index, ["amount"]).num_rows for index in range(len(plan.groups)))


@pytest.fixture
def second_server(s3_bucket_needing_options: str) -> Iterator[str]:
    """Another S3 server (moto's, in a process of its own: servers in one process share their
    buckets) holding a bucket of the same name."""
    import boto3

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                client.create_bucket(Bucket=s3_bucket_needing_options)
                break
            except EndpointConnectionError:
                assert time.monotonic() < deadline, "the second S3 server did not start"
                time.sleep(0.2)
        yield endpoint
    finally:
        server.terminate()
        server.wait(10)


def test_two_runs_in_one_process_read_one_source_through_their_own_options(
    fraud_project: Path, s3_bucket_needing_options: str, s3_options: dict[str, Any],
    second_server: str,
) -> None:
    import s3fs

    bucket = s3_bucket_needing_options
    second_options = {**s3_options, "client_kwargs": {
        **s3_options["client_kwargs"], "endpoint_url": second_server}}
    days = sorted((fraud_project / "data").glob("transactions-*.parquet"))
    first, second = s3fs.S3FileSystem(**s3_options), s3fs.S3FileSystem(**second_options)
    held = {"first": days[:3], "second": days[:2]}  # by each server, under the same names
    spec = yaml.safe_load((fraud_project / "pipeline.yaml").read_text())
    spec["data"]["source"] = f"s3://{bucket}/data/transactions-*.parquet"
    spec["evaluation"]["gates"] = []
    paths = {}
    for name, fs, options in (("first", first, s3_options), ("second", second, second_options)):
        for path in held[name]:
            fs.put(str(path), f"{bucket}/data/{path.name}")
        paths[name] = fraud_project / f"pipeline-{name}.yaml"
        paths[name].write_text(yaml.safe_dump({**spec, "data": {**spec["data"],
                                                                "storage_options": options}}))

    results: dict[str, PipelineResult] = {}
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            results[name] = run_pipeline(paths[name], STREAMING, steps=[rows_read])
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(name,)) for name in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    rows_on = {"first": _rows(first, f"{bucket}/data/", held["first"]),
               "second": _rows(second, f"{bucket}/data/", held["second"])}
    assert rows_on["first"] > rows_on["second"]
    for name, result in results.items():
        assert _output(result, "rows_read") == rows_on[name], name
        assert home_store().get_run(result.run.run_id).status == "completed"


def _rows(fs: Any, folder: str, days: list[Path]) -> int:
    import pyarrow.parquet as pq

    listed = sorted(name.rsplit("/", 1)[1] for name in fs.ls(folder))
    assert listed == [day.name for day in days]
    return sum(pq.ParquetFile(fs.open(f"{folder}{name}")).metadata.num_rows for name in listed)


def _output(result: PipelineResult, name: str) -> Any:
    """Output `name` of the run's pipeline run, read back from the value store."""
    store = home_store()
    for attempt in store.list_step_runs(result.run.system["pipeline_run"]):
        refs = stored_refs(attempt.outputs) or {}
        if name in refs:
            return value_store(Session.open(store=store)).get(refs[name], name)
    raise AssertionError(f"no step output {name!r}")
