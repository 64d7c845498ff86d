"""What storing the training chain's values costs, printed as JSON.

The fraud example's data (`examples/fraud/generate.py`, `--rows` rows, fixed seed) goes through
`run_pipeline` with one epoch, in a fresh home. Every step's outputs go into the value store
(`pipeline/_values.py`); the time each `ValueStore.put` takes (encode, hash, write) and the
bytes written are summed per step, against the steps' own wall time (their step runs' start to
end, the put included). `store_share` = put seconds / step seconds, over the whole chain.
Then what a resume pays to read them back: every step's outputs decoded (`ValueStore.get`:
read, hash check, decode), against the same steps' wall time (`read_share`). Most of the cost
is the Parquet encoding of the frames (the data read, the rows that passed validation, the
splits); a step that hands an input on unchanged does not store it again.

    .venv/bin/python benchmarks/chain_values.py [--rows 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fraud"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainforge-bench-") as folder:
        project = Path(folder)
        subprocess.run([sys.executable, str(EXAMPLE / "generate.py"), "--out",
                        str(project / "data"), "--rows", str(args.rows)], check=True,
                       capture_output=True)
        for name in ("pipeline.yaml", "contract.yaml"):
            shutil.copy(EXAMPLE / name, project / name)
        os.environ["TRAINFORGE_HOME"] = str(project / "home")
        print(json.dumps({"rows": args.rows, "machine": platform.processor() or platform.machine(),
                          "cpus": os.cpu_count(), **measure(project / "pipeline.yaml")},
                         indent=2))


def measure(spec: Path) -> dict[str, Any]:
    from trainforge.config import Settings
    from trainforge.orchestration import value_store
    from trainforge.orchestration.cache import stored_refs
    from trainforge.orchestration.values import ValueStore
    from trainforge.pipeline import run_pipeline
    from trainforge.session import Session
    from trainforge.storage import open_store

    put_s: dict[str, float] = defaultdict(float)
    written: dict[str, int] = defaultdict(int)
    original = ValueStore.put

    def timed_put(self: ValueStore, value: Any, what: str = "value") -> Any:
        started = time.perf_counter()
        ref = original(self, value, what)
        step = what.split("'")[1] if what.startswith("step '") else what
        put_s[step] += time.perf_counter() - started
        written[step] += ref.size if ref is not None else 0
        return ref

    ValueStore.put = timed_put  # type: ignore[method-assign]
    try:
        result = run_pipeline(spec, ["training.epochs=1"])
    finally:
        ValueStore.put = original  # type: ignore[method-assign]
    settings = Settings.from_env()
    store = open_store(settings.database_url.get_secret_value())
    values = value_store(Session.open(settings, store))
    steps: dict[str, dict[str, float]] = {}
    for attempt in store.list_step_runs(result.run.system["pipeline_run"]):
        assert attempt.started_at is not None and attempt.ended_at is not None
        started = time.perf_counter()
        for name, ref in (stored_refs(attempt.outputs) or {}).items():
            values.get(ref, name)
        steps[attempt.step] = {
            "step_s": round((attempt.ended_at - attempt.started_at).total_seconds(), 4),
            "put_s": round(put_s[attempt.step], 4),
            "get_s": round(time.perf_counter() - started, 4),
            "mb": round(written[attempt.step] / 1e6, 2)}
    total = sum(s["step_s"] for s in steps.values())
    stored = sum(s["put_s"] for s in steps.values())
    read = sum(s["get_s"] for s in steps.values())
    return {"steps": steps, "step_s": round(total, 3), "put_s": round(stored, 3),
            "get_s": round(read, 3),
            "mb": round(sum(s["mb"] for s in steps.values()), 1),
            "store_share": round(stored / total, 4), "read_share": round(read / total, 4)}


if __name__ == "__main__":
    main()
