"""The data figures of one machine in one JSON object: the four data benchmarks run one after
another, each in its own process, each measuring its own baseline in the same run.

- `loader`: streaming loader against pandas-then-tensors, and contract + profile in one pass
  (`data_loader.py`; goals: throughput ratio >= 1, streaming peak RSS < 1 GB, >= 5 million
  cells/s per core);
- `contract`: contract checks over Arrow batches against the frame checks (`data_contract.py`);
- `drift`: drift from stored profiles against raw KS/PSI (`data_drift.py`; goal: 100 columns
  under 1 s, >= 100x);
- `snapshot`: `data snapshot` of many small files and a no-op re-snapshot against naive
  copy-by-hash (`data_snapshot.py`; goals for 100,000 files: under 30 s and under 2 s).

    .venv/bin/python benchmarks/data.py [--rows 20000000] [--files 100000]

The baselines are our own whole-data ways (pandas, raw KS/PSI, naive copy-by-hash), and, where
they are installed (`make bench-peers`, then `.venv-peers/bin/python benchmarks/data.py`),
Evidently's DataDriftPreset on the drift data and `dvc add` on the snapshot files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def run(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        return {"failed": done.returncode, "stderr": done.stderr[-2000:]}
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000, help="loader benchmark rows")
    parser.add_argument("--files", type=int, default=100_000, help="snapshot benchmark files")
    args = parser.parse_args()
    print(json.dumps({
        "load_average": os.getloadavg()[0],
        "loader": run("data_loader.py", "--rows", str(args.rows)),
        "contract": run("data_contract.py"),
        "drift": run("data_drift.py"),
        "snapshot": run("data_snapshot.py", "--files", str(args.files)),
    }, indent=2))


if __name__ == "__main__":
    main()
