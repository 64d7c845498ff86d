"""Serving figures: `trainforge serve` on loopback, onnxruntime against torch, and MLflow's
server of the same model where `import mlflow` works (`make bench-peers`).

A fraud model (6 generated days, 1 epoch) is trained, exported and set to production in a
temporary home; then, for each runtime, `trainforge serve` runs as its own process and is
measured from this one over keep-alive HTTP/1.1 connections (the standard library's client,
the cheapest there is, so the figures are the server's plus the loopback):

- `one_record`: one client sending one record at a time: p50 / p99 latency (ms) and
  requests/s. Goals: p50 <= 1 ms, p99 <= 5 ms, validation and feature transform included.
- `clients_32`: 32 concurrent clients (threads) sending one record each: p99 (ms) and
  requests/s. Goal: p99 <= 50 ms.
- `batch_256`: one client sending 256 records a request: rows/s.
- `health`: the same client on `GET /health` (no model work): the HTTP floor in this run;
  `predict_over_health_p50` is the one-record p50 over it.
- `onnx_over_torch`: each onnxruntime figure over torch's (requests/s and rows/s: > 1 is
  faster; latency: < 1 is faster).
- `mlflow`: `mlflow models serve` of the same torch model and feature pipeline (a pyfunc),
  one record at 1 client on /invocations, and our requests/s over it (goal >= 3); or a note
  why it was not measured.

The machine's load average is printed too: other work on the machine skews every figure.

    .venv/bin/python benchmarks/serving.py [--requests 2000]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


def prepare(folder: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Train, export and promote a fraud model under `folder`; (environment, golden records)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from example_scripts import load_example_script
    from trained_fraud import train_fraud

    from trainforge.entities import ModelStage
    from trainforge.export import export_model

    data = folder / "data"
    load_example_script("fraud", "generate.py").generate(data, days=6, rows=24_000, seed=7)
    fraud = train_fraud(folder / "run", data)
    export_model(fraud.artifacts, fraud.store.get_run(fraud.run_id))
    fraud.register(ModelStage.PRODUCTION)
    golden = fraud.golden().drop(columns=["is_fraud"])
    golden["ts"] = golden["ts"].map(lambda t: t.isoformat())
    records = [{k: None if isinstance(v, float) and math.isnan(v) else v
                for k, v in row.items()} for row in golden.to_dict(orient="records")]
    return fraud.env, records


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(port: int, path: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", path)
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("server did not start")


def timed_requests(port: int, method: str, path: str, body: bytes | None,
                   count: int) -> list[float]:
    """Seconds per request over one keep-alive connection (after 50 warm-up requests)."""
    connection = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Content-Type": "application/json"}
    times = []
    for index in range(count + 50):
        start = time.perf_counter()
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"{path}: HTTP {response.status}")
        if index >= 50:
            times.append(time.perf_counter() - start)
    connection.close()
    return times


def concurrent(port: int, path: str, body: bytes, clients: int,
               per_client: int) -> tuple[list[float], float]:
    """Latencies of `clients` threads each sending `per_client` requests; and the wall time."""
    results: list[list[float]] = [[] for _ in range(clients)]
    barrier = threading.Barrier(clients + 1)

    def client(slot: int) -> None:
        barrier.wait()
        results[slot] = timed_requests(port, "POST", path, body, per_client)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return [t for r in results for t in r], time.perf_counter() - start


def percentile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def measure(port: int, path: str, one: bytes, batch: bytes, requests: int) -> dict[str, Any]:
    single = timed_requests(port, "POST", path, one, requests)
    per_client = max(10, requests // 32)
    many, wall = concurrent(port, path, one, 32, per_client)
    batched = timed_requests(port, "POST", path, batch, max(50, requests // 10))
    return {
        "one_record": {"p50_ms": percentile(single, 0.5), "p99_ms": percentile(single, 0.99),
                       "requests_per_s": len(single) / sum(single)},
        "clients_32": {"p50_ms": percentile(many, 0.5), "p99_ms": percentile(many, 0.99),
                       "requests_per_s": 32 * (per_client + 50) / wall},
        "batch_256": {"p50_ms": percentile(batched, 0.5),
                      "rows_per_s": 256 * len(batched) / sum(batched)},
    }


def serve_trainforge(env: dict[str, str], runtime: str, records: list[dict[str, Any]],
                     requests: int) -> dict[str, Any]:
    port = free_port()
    process = subprocess.Popen(
        [TRAINFORGE, "serve", "fraud_detector", "--port", str(port), "--runtime", runtime],
        env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_up(port, "/health", process)
        one = json.dumps(records[:1]).encode()
        batch = json.dumps(records[:256]).encode()
        figures = measure(port, "/predict", one, batch, requests)
        health = timed_requests(port, "GET", "/health", None, requests)
        figures["health"] = {"p50_ms": percentile(health, 0.5)}
        figures["predict_over_health_p50"] = (figures["one_record"]["p50_ms"]
                                              / figures["health"]["p50_ms"])
        return figures
    finally:
        process.terminate()
        process.wait(30)


def serve_mlflow(env: dict[str, str], records: list[dict[str, Any]], folder: Path,
                 requests: int) -> dict[str, Any]:
    """`mlflow models serve` of a pyfunc scoring raw records with our stored model."""
    try:
        import mlflow.pyfunc
    except ImportError:
        return {"measured": False, "note": "mlflow is not importable here; run in the "
                                           "`make bench-peers` venv (.venv-peers)"}
    model_path = folder / "mlflow-model"
    save_pyfunc(env, model_path, mlflow.pyfunc)
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("mlflow")), "models", "serve", "-m",
         str(model_path), "-p", str(port), "--env-manager", "local"],
        env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_up(port, "/ping", process)
        one = json.dumps({"dataframe_records": records[:1]}).encode()
        single = timed_requests(port, "POST", "/invocations", one, requests)
        return {"measured": True,
                "one_record": {"p50_ms": percentile(single, 0.5),
                               "p99_ms": percentile(single, 0.99),
                               "requests_per_s": len(single) / sum(single)}}
    finally:
        process.terminate()
        process.wait(30)


def save_pyfunc(env: dict[str, str], path: Path, pyfunc: Any) -> None:
    """The production version's run as an MLflow pyfunc: its feature pipeline and module."""
    from trainforge.config import Settings
    from trainforge.storage import open_store

    settings = Settings.from_env(env)
    store = open_store(settings.database_url.get_secret_value())
    version = next(v for v in store.list_model_versions("fraud_detector").items
                   if v.stage.value == "production")

    class FraudModel(pyfunc.PythonModel):  # type: ignore[misc,name-defined]
        def load_context(self, context: Any) -> None:
            from trainforge.storage.artifacts import open_artifact_store
            from trainforge.train import load_stored_model

            self.model = load_stored_model(open_artifact_store(settings.artifact_root),
                                           version.run_id)

        def predict(self, context: Any, model_input: Any, params: Any = None) -> Any:
            return self.model.predict_scores(model_input)

    pyfunc.save_model(str(path), python_model=FraudModel())


def ratios(onnx: dict[str, Any], torch: dict[str, Any]) -> dict[str, float]:
    return {
        "one_record_requests_per_s": (onnx["one_record"]["requests_per_s"]
                                      / torch["one_record"]["requests_per_s"]),
        "one_record_p50": onnx["one_record"]["p50_ms"] / torch["one_record"]["p50_ms"],
        "clients_32_requests_per_s": (onnx["clients_32"]["requests_per_s"]
                                      / torch["clients_32"]["requests_per_s"]),
        "batch_256_rows_per_s": (onnx["batch_256"]["rows_per_s"]
                                 / torch["batch_256"]["rows_per_s"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="trainforge-bench-serving-"))
    try:
        env, records = prepare(folder)
        onnx = serve_trainforge(env, "onnxruntime", records, args.requests)
        torch = serve_trainforge(env, "torch", records, args.requests)
        mlflow = serve_mlflow(env, records, folder, args.requests)
        if mlflow.get("measured"):
            mlflow["ours_over_mlflow_requests_per_s"] = (
                onnx["one_record"]["requests_per_s"] / mlflow["one_record"]["requests_per_s"])
        figures = {
            "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count(),
            "onnxruntime": onnx, "torch": torch, "onnx_over_torch": ratios(onnx, torch),
            "mlflow": mlflow,
            "goals": {
                "one_record_p50_le_1ms": onnx["one_record"]["p50_ms"] <= 1.0,
                "one_record_p99_le_5ms": onnx["one_record"]["p99_ms"] <= 5.0,
                "clients_32_p99_le_50ms": onnx["clients_32"]["p99_ms"] <= 50.0,
                "ge_3x_mlflow": (mlflow["ours_over_mlflow_requests_per_s"] >= 3.0
                                 if mlflow.get("measured") else None),
            },
        }
        print(json.dumps(figures, indent=2))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
