"""Server benchmark: `trainforge server`'s latency over a large PostgreSQL store and its batch
ingest rate, printed as JSON.

    .venv/bin/python benchmarks/server.py                             # the issue's sizes
    .venv/bin/python benchmarks/server.py --runs 1000 --steps 100     # a quick run
    .venv-peers/bin/python benchmarks/server.py                       # also MLflow's server

- seeds a scratch PostgreSQL database with `--runs` runs of `--params` params and `--metrics`
  series of `--steps` points (the store's bulk inserts), then starts `trainforge server` on
  loopback over it, as a user starts it (one process);
- latency: the median of 5 (after one warm-up) of the runs page (first page, sorted by a
  metric, filtered on a metric and a param) and of one chart of 10 runs (10 downsampled
  series, one request each, summed), as server time (the `Server-Timing` header the server
  adds to each answer: from the request's arrival to its answer) and as the client's round
  trip;
- ingest: points/s through `POST /api/v1/runs/{id}/metrics` in batches of `--batch` points
  from `--clients` clients at once, until every batch is answered (stored);
- mlflow (where importable): MLflow's tracking server, started on loopback over a scratch
  PostgreSQL database of its own, logging the same points in batches of 1,000 (its limit
  per request) from as many clients, and our rate divided by its.

PostgreSQL is required (`--pg-url`: a maintenance database; scratch databases are made and
dropped).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from tracking import DEFAULT_PG, _postgres, generate

from trainforge.entities import Role
from trainforge.server import issue_token
from trainforge.storage import SqlStore
from trainforge.tracking._environment import cpu_model

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
LATENCY_GOAL_MS = 300
INGEST_GOAL = 50_000
MLFLOW_RATIO_GOAL = 3


def main() -> None:
    args = _arguments()
    report: dict[str, Any] = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                                          "python": platform.python_version()},
                              "sizes": {k: v for k, v in vars(args).items() if k != "pg_url"}}
    with tempfile.TemporaryDirectory(prefix="tf-bench-server-") as folder:
        tmp = Path(folder)
        with _scratch_database(args.pg_url) as url:
            store = SqlStore(url)
            started = time.perf_counter()
            run_ids = generate(store, args.runs, args.metrics, args.steps, args.params)
            report["seed_s"] = round(time.perf_counter() - started, 1)
            store.add_user("bench", Role.EDITOR)
            token, _ = issue_token(store, "bench")
            experiment = store.get_run(run_ids[0]).experiment_id
            store.close()
            with _trainforge_server(url, tmp) as base, _client(base, token) as client:
                report["latency"] = latency(client, experiment, run_ids)
                report["ingest"] = ingest(
                    lambda: _TrainforgeIngest(client, experiment), args)
        report["mlflow"] = mlflow_ingest(args, tmp, report["ingest"])
    report["goals"] = _goals(report)
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the store")
    parser.add_argument("--metrics", type=int, default=20, help="metric series per run")
    parser.add_argument("--steps", type=int, default=1_000, help="points per series")
    parser.add_argument("--params", type=int, default=100, help="params per run")
    parser.add_argument("--points", type=int, default=1_000_000, help="points to ingest")
    parser.add_argument("--batch", type=int, default=10_000, help="points per ingest batch")
    parser.add_argument("--clients", type=int, default=4, help="clients ingesting at once")
    parser.add_argument("--pg-url", default=os.environ.get("TRAINFORGE_TEST_PG_URL", DEFAULT_PG),
                        help="libpq URL of a maintenance database; scratch ones are made")
    return parser.parse_args()


@contextmanager
def _scratch_database(admin_url: str) -> Iterator[str]:
    """A new database on the server of `admin_url`, dropped after (a SQLAlchemy URL)."""
    with _postgres(admin_url) as url:
        if isinstance(url, dict):
            sys.exit(f"benchmarks/server.py needs PostgreSQL: {url['skipped']}")
        yield url


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _serving(command: list[str], env: dict[str, str], health: str) -> Iterator[None]:
    """`command` running until the block ends, once `health` answers 200."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                sys.exit(f"{command[0]} exited: {_tail(process)}")
            try:
                if httpx.get(health, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                sys.exit(f"{command[0]} did not answer {health} within 120 s")
            time.sleep(0.2)
        yield
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def _tail(process: subprocess.Popen[str]) -> str:
    return process.stderr.read()[-2000:] if process.stderr is not None else ""


@contextmanager
def _trainforge_server(url: str, home: Path) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "TRAINFORGE_HOME": str(home / "server"), "TRAINFORGE_DB": url}
    base = f"http://127.0.0.1:{port}"
    with _serving([TRAINFORGE, "server", "--port", str(port)], env, base + "/health"):
        yield base


@contextmanager
def _client(base: str, token: str | None = None) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    with httpx.Client(base_url=base, headers=headers, timeout=120, limits=limits) as client:
        yield client


def _server_ms(answer: httpx.Response) -> float:
    """The server's own time for an answer, from its `Server-Timing: app;dur=MS` header."""
    answer.raise_for_status()
    timing = answer.headers["server-timing"]
    return float(timing.split("dur=")[1].split(",")[0])


def latency(client: httpx.Client, experiment: str, run_ids: list[str]) -> dict[str, Any]:
    runs = f"/api/v1/experiments/{experiment}/runs"
    chart = run_ids[len(run_ids) // 2:][:10]
    pages: dict[str, Callable[[], list[httpx.Response]]] = {
        "runs_first_page": lambda: [client.get(runs, params={"limit": 50})],
        "runs_sorted_by_metric": lambda: [client.get(runs, params={
            "sort": "-metrics.test_auc", "limit": 50})],
        "runs_filtered": lambda: [client.get(runs, params={
            "filter": "metrics.test_auc > 0.9 and params.training.optimizer.lr < 1e-3",
            "limit": 50})],
        "chart_of_10_runs": lambda: [client.get(f"/api/v1/runs/{run_id}/metrics/m0",
                                                params={"max_points": 500})
                                     for run_id in chart],
    }
    result: dict[str, Any] = {}
    for name, request in pages.items():
        request()  # warm-up
        server, round_trip = [], []
        for _ in range(5):
            started = time.perf_counter()
            answers = request()
            round_trip.append((time.perf_counter() - started) * 1000)
            server.append(sum(_server_ms(answer) for answer in answers))
        result[f"{name}_server_ms"] = round(statistics.median(server), 1)
        result[f"{name}_round_trip_ms"] = round(statistics.median(round_trip), 1)
    return result


class _TrainforgeIngest:
    """One client's run on trainforge server and its batches."""

    def __init__(self, client: httpx.Client, experiment: str) -> None:
        self.client = client
        answer = client.post(f"/api/v1/experiments/{experiment}/runs",
                             json={"params": {"bench": "ingest"}})
        answer.raise_for_status()
        self.run_id = answer.json()["run_id"]

    def send(self, first_step: int, size: int) -> None:
        points = [{"key": f"m{step % 20}", "value": step * 1e-3, "step": step,
                   "timestamp": 1.7e9 + step / 1e3}
                  for step in range(first_step, first_step + size)]
        answer = self.client.post(f"/api/v1/runs/{self.run_id}/metrics", json={
            "batch_id": uuid.uuid4().hex, "points": points})
        answer.raise_for_status()


def ingest(new_client: Callable[[], Any], args: argparse.Namespace,
           batch: int | None = None) -> dict[str, Any]:
    """Points/s of `--points` points sent in batches by `--clients` clients at once."""
    batch = batch or args.batch
    senders = [new_client() for _ in range(args.clients)]
    per_client = args.points // args.clients // batch * batch

    def send_all(sender: Any) -> None:
        for first in range(0, per_client, batch):
            sender.send(first, batch)

    started = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        list(pool.map(send_all, senders))
    elapsed = time.perf_counter() - started
    total = per_client * args.clients
    return {"points": total, "batch": batch, "clients": args.clients,
            "points_per_s": round(total / elapsed)}


class _MlflowIngest:
    """One client's run on MLflow's tracking server and its batches (its REST API)."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        answer = client.post("/api/2.0/mlflow/runs/create", json={
            "experiment_id": "0", "start_time": int(time.time() * 1000)})
        answer.raise_for_status()
        self.run_id = answer.json()["run"]["info"]["run_id"]

    def send(self, first_step: int, size: int) -> None:
        metrics = [{"key": f"m{step % 20}", "value": step * 1e-3, "step": step,
                    "timestamp": int((1.7e9 + step / 1e3) * 1000)}
                   for step in range(first_step, first_step + size)]
        answer = self.client.post("/api/2.0/mlflow/runs/log-batch",
                                  json={"run_id": self.run_id, "metrics": metrics})
        answer.raise_for_status()


def mlflow_ingest(args: argparse.Namespace, tmp: Path, ours: dict[str, Any]) -> dict[str, Any]:
    """MLflow's tracking server ingesting the same points, and our rate divided by its."""
    try:
        import mlflow
    except ImportError:
        return {"skipped": "mlflow is not importable here (make bench-peers, then run this "
                           "script with .venv-peers/bin/python)"}
    executable = shutil.which("mlflow", path=str(Path(sys.executable).parent))
    if executable is None:
        return {"skipped": f"no mlflow command beside {sys.executable}"}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with _scratch_database(args.pg_url) as url:
        command = [executable, "server", "--host", "127.0.0.1", "--port", str(port),
                   "--workers", "1", "--backend-store-uri", url,
                   "--default-artifact-root", str(tmp / "mlflow-artifacts")]
        with _serving(command, dict(os.environ), base + "/health"), _client(base) as client:
            theirs = ingest(lambda: _MlflowIngest(client), args, batch=1000)
    return {"version": mlflow.__version__, **theirs,
            "ratio": round(ours["points_per_s"] / theirs["points_per_s"], 1)}


def _goals(report: dict[str, Any]) -> dict[str, Any]:
    goals: dict[str, Any] = {
        f"{name[:-len('_server_ms')]}_at_most_{LATENCY_GOAL_MS}_ms": value <= LATENCY_GOAL_MS
        for name, value in report["latency"].items() if name.endswith("_server_ms")}
    goals[f"ingest_at_least_{INGEST_GOAL}_points_per_s"] = (
        report["ingest"]["points_per_s"] >= INGEST_GOAL)
    mlflow = report["mlflow"]
    goals[f"ingest_at_least_{MLFLOW_RATIO_GOAL}x_mlflow"] = (
        mlflow["ratio"] >= MLFLOW_RATIO_GOAL if "ratio" in mlflow else None)
    return goals


if __name__ == "__main__":
    main()
