"""The pipeline runner's own cost, printed as JSON, on SQLite and PostgreSQL.

- **per-step overhead**: a chain of `--steps` no-op steps (each returns its input plus one, a
  small JSON value) run by `InProcessRunner` with every state persisted (pending, running,
  succeeded rows per step, the value stored, the cache key computed and looked up); cache off
  (`use_cache=False`: every step executes) and cache on after a first run (every step a hit).
  Baseline, measured in the same rounds: the same functions called one after another in a
  loop. Overhead per step = (runner time - baseline time) / steps; the ratio is runner time
  over baseline time.
- **cache lookup**: `cache.lookup` of a step's key (the indexed query for the newest
  succeeded execution, then the check that its outputs are still stored) with `--history`
  step runs in the database; p50 and p99 over `--lookups` lookups of keys spread over them.

Goals: <= 10 ms of overhead per step, cache lookup p99 <= 5 ms. PostgreSQL is the server at
`--pg-url` (a database is created for the run and dropped after); without one, its figures are
left out, saying why.

    .venv/bin/python benchmarks/pipeline.py [--steps 50] [--rounds 5] [--history 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trainforge.entities import Pipeline as PipelineRecord
from trainforge.entities import StepState
from trainforge.orchestration import Dag, InProcessRunner, RunOptions, Step, ValueStore
from trainforge.orchestration.cache import lookup
from trainforge.orchestration.fingerprint import CacheKey
from trainforge.storage import Store, open_store
from trainforge.storage.objects import open_object_store

OVERHEAD_GOAL_MS = 10.0
LOOKUP_GOAL_MS = 5.0


def plus_one(value: int) -> int:
    return value + 1


def start() -> int:
    return 0


def chain(steps: int) -> Dag:
    made = [Step("s0", start, (), ("v0",))]
    made += [Step(f"s{i}", plus_one, (f"v{i - 1}",), (f"v{i}",), renames={f"v{i - 1}": "value"})
             for i in range(1, steps)]
    return Dag("bench", tuple(made))


def baseline(steps: int) -> float:
    began = time.perf_counter()
    value = start()
    for _ in range(1, steps):
        value = plus_one(value)
    return time.perf_counter() - began


def runner_overhead(store: Store, values: ValueStore, steps: int, rounds: int) -> dict:
    dag = chain(steps)
    store.upsert_pipeline(PipelineRecord("bench", "bench", {}))
    runner = InProcessRunner(store, values)
    runner.run(dag)  # warm: imports, connections, the cache entries the hit rounds reuse
    executed, hits, direct = [], [], []
    for _ in range(rounds):
        direct.append(baseline(steps))
        began = time.perf_counter()
        outcome = runner.run(dag, options=RunOptions(use_cache=False))
        executed.append(time.perf_counter() - began)
        assert outcome.value(f"v{steps - 1}") == steps - 1
        began = time.perf_counter()
        outcome = runner.run(dag)
        hits.append(time.perf_counter() - began)
        assert all(a.state is StepState.CACHED for a in outcome.steps.values())
    base = statistics.median(direct)
    return {
        "steps": steps,
        "baseline_s": base,
        "executed_s": statistics.median(executed),
        "cached_s": statistics.median(hits),
        "overhead_ms_per_step_executed": (statistics.median(executed) - base) / steps * 1e3,
        "overhead_ms_per_step_cached": (statistics.median(hits) - base) / steps * 1e3,
        "ratio_executed_to_baseline": statistics.median(executed) / base,
    }


def cache_lookups(store: Store, values: ValueStore, history: int, lookups: int) -> dict:
    """`history` succeeded step runs with distinct keys, then timed lookups of them."""
    store.upsert_pipeline(PipelineRecord("history", "history", {}))
    ref = values.put({"value": 1})
    assert ref is not None
    keys = []
    pipeline_run = store.create_pipeline_run(uuid.uuid4().hex, "history", {}, {})
    for index in range(history):
        row = store.add_step_run(pipeline_run.pipeline_run_id, f"s{index % 50}", 1,
                                 StepState.RUNNING)
        key = uuid.uuid4().hex + uuid.uuid4().hex
        store.update_step_run(row.step_run_id, StepState.SUCCEEDED, cache_key=key,
                              ended_at=pipeline_run.started_at, outputs={"v": ref.to_json()})
        keys.append(key)
    step = Step("s", plus_one, ("v",), ("w",))
    timings = []
    for index in range(lookups):
        key = keys[(index * 7919) % len(keys)]
        began = time.perf_counter()
        decision, found = lookup(store, values, step, CacheKey(key, {}), None)
        timings.append(time.perf_counter() - began)
        assert decision == "hit" and found is not None
    timings.sort()
    return {"history": history, "lookups": lookups,
            "p50_ms": timings[len(timings) // 2] * 1e3,
            "p99_ms": timings[int(len(timings) * 0.99) - 1] * 1e3}


@contextmanager
def postgres(admin_url: str) -> Iterator[str]:
    import psycopg

    name = f"trainforge_bench_{os.getpid()}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def measure(url: str, folder: Path, args: argparse.Namespace) -> dict:
    store = open_store(url)
    values = ValueStore(open_object_store(folder / "objects"))
    try:
        return {"runner": runner_overhead(store, values, args.steps, args.rounds),
                "cache_lookup": cache_lookups(store, values, args.history, args.lookups)}
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--history", type=int, default=5000)
    parser.add_argument("--lookups", type=int, default=1000)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    results: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                 "load_before": os.getloadavg()},
                     "goals": {"overhead_ms_per_step": OVERHEAD_GOAL_MS,
                               "cache_lookup_p99_ms": LOOKUP_GOAL_MS}}
    with tempfile.TemporaryDirectory() as folder:
        results["sqlite"] = measure(f"sqlite:///{folder}/bench.db", Path(folder), args)
    try:
        with postgres(args.pg_url) as url, tempfile.TemporaryDirectory() as folder:
            results["postgresql"] = measure(url, Path(folder), args)
    except Exception as exc:  # noqa: BLE001 - the SQLite figures still stand
        results["postgresql"] = {"skipped": f"{type(exc).__name__}: {exc}"}
    results["machine"]["load_after"] = os.getloadavg()
    json.dump(results, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
