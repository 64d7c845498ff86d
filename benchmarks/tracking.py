"""Tracking benchmark: logging rates and query latency, printed as JSON.

    .venv/bin/python benchmarks/tracking.py                      # the issue's sizes
    .venv/bin/python benchmarks/tracking.py --runs 2000 --steps 50   # a quick run
    .venv-peers/bin/python benchmarks/tracking.py                # also MLflow, same workload

- logging: points/s from the first call until every point is in the database (`flush()`),
  one `log_metric` call per point and `log_metrics` with 20 keys per call, on SQLite and on
  PostgreSQL (skipped, with the reason, when the server is unreachable);
- queries: latency (median of 5) of listing, sorting by a metric, filtering on a metric and a
  nested param, and reading a metric history (whole and downsampled), over a generated set of
  `--runs` runs with `--metrics` series of `--steps` points each, made with bulk inserts;
- mlflow (where importable): MLflow's per-call and batch rates on its SQLite store for the same
  workload in the same process, and our rates divided by them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainforge.entities import MetricPoint, RunStatus
from trainforge.storage import SqlStore
from trainforge.tracking import start_run
from trainforge.tracking._environment import cpu_model

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"


def main() -> None:
    args = _arguments()
    os.environ["TRAINFORGE_HOME"] = tempfile.mkdtemp(prefix="tf-bench-")
    report: dict[str, Any] = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                                          "python": platform.python_version()},
                              "sizes": vars(args), "logging": {}, "queries": {}}
    with tempfile.TemporaryDirectory() as tmp:
        backends = {"sqlite": _sqlite(Path(tmp)), "postgresql": _postgres(args.pg_url)}
        for name, opener in backends.items():
            with opener as url:
                if isinstance(url, dict):
                    report["logging"][name] = report["queries"][name] = url
                    continue
                report["logging"][name] = logging_rates(url, args.points, Path(tmp))
                report["queries"][name] = query_latency(url, args)
        report["mlflow"] = mlflow_rates(Path(tmp), args.mlflow_calls, args.points,
                                        report["logging"]["sqlite"])
    report["goals"] = _goals(report)
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=200_000, help="points per logging test")
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the query set")
    parser.add_argument("--metrics", type=int, default=20, help="metric series per run")
    parser.add_argument("--steps", type=int, default=1_000, help="points per series")
    parser.add_argument("--mlflow-calls", type=int, default=3_000, help="MLflow per-call points")
    parser.add_argument("--pg-url", default=os.environ.get("TRAINFORGE_TEST_PG_URL", DEFAULT_PG),
                        help="libpq URL of a maintenance database; a scratch one is made")
    return parser.parse_args()


@contextmanager
def _sqlite(tmp: Path) -> Iterator[str]:
    yield f"sqlite:///{tmp / f'bench-{uuid.uuid4().hex[:8]}.db'}"


@contextmanager
def _postgres(admin_url: str) -> Iterator[str | dict[str, str]]:
    try:
        import psycopg

        admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=5)
    except Exception as exc:  # noqa: BLE001 - any failure means: no PostgreSQL here
        yield {"skipped": f"PostgreSQL not reachable at {admin_url}: {exc}"}
        return
    name = f"tf_bench_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1) \
            + f"/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def logging_rates(url: str, points: int, tmp: Path) -> dict[str, float]:
    """Points per second, end to end (all in the database), per call and in 20-key calls."""
    store = SqlStore(url)
    try:
        with start_run("bench-log", store=store, code_dir=tmp) as run:
            started = time.perf_counter()
            for step in range(points):
                run.log_metric("loss", step * 1e-3, step)
            called = time.perf_counter()
            run.flush()
            done = time.perf_counter()
        keys = [f"m{k}" for k in range(20)]
        with start_run("bench-log", store=store, code_dir=tmp) as run:
            batch_started = time.perf_counter()
            for step in range(points // 20):
                run.log_metrics(dict.fromkeys(keys, step * 1e-3), step)
            run.flush()
            batch_done = time.perf_counter()
    finally:
        store.close()
    return {"per_call_points_per_s": round(points / (done - started)),
            "per_call_call_only_per_s": round(points / (called - started)),
            "batch_points_per_s": round(points // 20 * 20 / (batch_done - batch_started))}


def query_latency(url: str, args: argparse.Namespace) -> dict[str, Any]:
    store = SqlStore(url)
    try:
        started = time.perf_counter()
        run_ids = generate(store, args.runs, args.metrics, args.steps)
        generated = time.perf_counter() - started
        one = run_ids[len(run_ids) // 2]
        timings = {
            "list_newest_50_ms": lambda: store.search_runs(limit=50),
            "sort_by_metric_50_ms": lambda: store.search_runs(sort="-metrics.test_auc", limit=50),
            "sort_by_metric_all_ms": lambda: store.search_runs(sort="-metrics.test_auc",
                                                               limit=args.runs),
            "filter_ms": lambda: store.search_runs(
                filter="metrics.test_auc > 0.9 and params.training.optimizer.lr < 1e-3",
                limit=50),
            "filter_and_sort_ms": lambda: store.search_runs(
                filter="metrics.test_auc > 0.9 and params.training.optimizer.lr < 1e-3",
                sort="-metrics.m3", limit=50),
            "sort_by_param_ms": lambda: store.search_runs(sort="params.training.optimizer.lr",
                                                          limit=50),
            "history_whole_ms": lambda: store.get_metric_history(one, "m0", limit=args.steps),
            "history_100_points_ms": lambda: store.get_metric_history(one, "m0", max_points=100),
        }
        result: dict[str, Any] = {"runs": args.runs, "points": args.runs * args.metrics
                                  * args.steps, "generate_s": round(generated, 1)}
        result.update({name: _median_ms(query) for name, query in timings.items()})
        return result
    finally:
        store.close()


NESTED_PARAMS = 6


def generate(store: SqlStore, runs: int, metrics: int, steps: int,
             params_per_run: int = NESTED_PARAMS) -> list[str]:
    """Runs with `params_per_run` params (6 nested, the rest flat under `sweep`), `metrics`
    series of `steps` points (one bulk insert per run) and a summary `test_auc`."""
    rng = random.Random(0)
    experiment = store.get_or_create_experiment("bench").experiment_id
    run_ids = []
    for index in range(runs):
        params = {"training": {"optimizer": {"lr": 10 ** rng.uniform(-5, -1), "name": "adamw"},
                               "batch_size": rng.choice([64, 128, 256]), "epochs": 10},
                  "model": {"hidden": [64, 32], "dropout": rng.random() / 2}}
        if params_per_run > NESTED_PARAMS:
            params["sweep"] = {f"p{k}": rng.random()
                               for k in range(params_per_run - NESTED_PARAMS)}
        run = store.create_run(experiment, params, {"bench": True}, "file:///bench")
        points = [MetricPoint(f"m{k}", rng.random(), step, 1.7e9 + index + step / 1e3)
                  for k in range(metrics) for step in range(steps)]
        store.log_metrics(run.run_id, points)
        store.set_summary_metrics(run.run_id, {"test_auc": rng.random()})
        store.end_run(run.run_id, RunStatus.COMPLETED)
        run_ids.append(run.run_id)
    return run_ids


def _median_ms(query: Callable[[], object], repeat: int = 5) -> float:
    query()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        query()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 1)


def mlflow_rates(tmp: Path, calls: int, points: int, ours: dict[str, Any]) -> dict[str, Any]:
    """MLflow's rates on its SQLite store, same workload, and ours divided by them."""
    try:
        import mlflow
        from mlflow.entities import Metric
    except ImportError:
        return {"skipped": "mlflow is not importable here (make bench-peers, then run this "
                           "script with .venv-peers/bin/python)"}
    mlflow.set_tracking_uri(f"sqlite:///{tmp / 'mlflow.db'}")
    mlflow.set_experiment("bench")
    with mlflow.start_run() as run:
        started = time.perf_counter()
        for step in range(calls):
            mlflow.log_metric("loss", step * 1e-3, step=step)
        per_call = calls / (time.perf_counter() - started)
        client = mlflow.tracking.MlflowClient()
        batch = min(points, 100_000)
        started = time.perf_counter()
        for first in range(0, batch, 1000):
            client.log_batch(run.info.run_id, metrics=[
                Metric("m", step * 1e-3, int(time.time() * 1000), step)
                for step in range(first, first + 1000)])
        batched = batch / (time.perf_counter() - started)
    return {"version": mlflow.__version__, "per_call_points_per_s": round(per_call),
            "batch_points_per_s": round(batched),
            "ratio_per_call": round(ours["per_call_points_per_s"] / per_call, 1),
            "ratio_batch": round(ours["batch_points_per_s"] / batched, 1)}


def _goals(report: dict[str, Any]) -> dict[str, Any]:
    mlflow = report["mlflow"]
    goals: dict[str, Any] = {"per_call_ratio_vs_mlflow_at_least_100": (
        mlflow["ratio_per_call"] >= 100 if "ratio_per_call" in mlflow else None)}
    for backend, queries in report["queries"].items():
        if "sort_by_metric_50_ms" in queries:
            goals[f"{backend}_sort_{queries['runs']}_runs_by_metric_at_most_300_ms"] = (
                queries["sort_by_metric_50_ms"] <= 300)
    return goals


if __name__ == "__main__":
    main()
