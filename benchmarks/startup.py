"""What the garbage collector costs a training process, printed as JSON.

`trainforge run` of the fraud example (its generated data, `--rows` rows, one epoch) in a
fresh home each time, three ways, in interleaved rounds (every way once per round, so drifting
load hits them alike):

- `shipped`: as trainforge runs it: the collector off during the imports, then every object
  alive frozen (`trainforge._collector.started`);
- `unfrozen`: the same with `gc.freeze` a no-op: full collections walk the imported objects;
- `collector_on`: the collector on from the first import as well (what a process that never
  turned it off pays).

A figure is the median wall time and CPU time (user + system) over the rounds, and each way's
median CPU time as a ratio to `shipped`'s.

    .venv/bin/python benchmarks/startup.py [--rounds 5] [--rows 24000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fraud"
PRELUDES = {
    "shipped": "",
    "unfrozen": "import gc; gc.freeze = lambda: None",
    "collector_on": "import gc; gc.freeze = lambda: None; gc.disable = lambda: None",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=24_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainforge-bench-") as folder:
        project = Path(folder)
        subprocess.run([sys.executable, str(EXAMPLE / "generate.py"), "--out",
                        str(project / "data"), "--rows", str(args.rows), "--days", "6"],
                       check=True, capture_output=True)
        for name in ("pipeline.yaml", "contract.yaml"):
            shutil.copy(EXAMPLE / name, project / name)
        timings: dict[str, list[tuple[float, float]]] = {way: [] for way in PRELUDES}
        for round_ in range(args.rounds):
            for way, prelude in PRELUDES.items():
                timings[way].append(_run(project, prelude, project / f"home-{way}-{round_}"))
    shipped_cpu = statistics.median(cpu for _, cpu in timings["shipped"])
    print(json.dumps({
        "rows": args.rows, "rounds": args.rounds, "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        **{way: {"wall_s": round(statistics.median(w for w, _ in runs), 2),
                 "cpu_s": round(statistics.median(c for _, c in runs), 2),
                 "cpu_ratio_to_shipped": round(statistics.median(c for _, c in runs)
                                               / shipped_cpu, 2)}
           for way, runs in timings.items()},
    }, indent=2))


def _run(project: Path, prelude: str, home: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `trainforge run` with `prelude` run first."""
    code = "\n".join([prelude, "import sys", "from trainforge.cli import main",
                      "sys.argv[0] = 'trainforge'", "main()"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, "run", str(project / "pipeline.yaml"),
                    "training.epochs=1", "--json"], check=True, capture_output=True,
                   env={**os.environ, "TRAINFORGE_HOME": str(home)})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


if __name__ == "__main__":
    main()
