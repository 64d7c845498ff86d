"""Contract-check figures: `ContractChecker` streaming a Parquet source in record batches
against the whole-frame way (pandas reads every row, then vectorised pandas checks of the same
rules), on generated data, measured in one run.

Prints one JSON object (with the machine's load average: other work skews every figure):

- `stream_cells_per_s`: cells (rows x contract columns) checked per second by
  `iter_batches` + `ContractChecker` (one core: the checker is single-threaded), reading
  included; `frame_cells_per_s` likewise for the whole-frame way; `speed_ratio` = stream /
  frame. The issue's goal for contract + profile in one pass is >= 5 million cells/s per core.
- `stream_peak_arrow_mb` / `frame_mb`: the most memory Arrow held while streaming (its pool's
  high-water mark, in a fresh process that only streams) against the frame's size in memory:
  streaming stays near one batch whatever the data's size.

    .venv/bin/python benchmarks/data_contract.py [--rows 2000000] [--files 8]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from trainforge.ingest import iter_batches
from trainforge.validate import ContractChecker, SchemaContract

CONTRACT = {
    "columns": {
        "id": {"type": "int", "min": 0},
        "amount": {"type": "float", "min": 0, "max": 50_000},
        "hour": {"type": "int", "min": 0, "max": 23},
        "category": {"type": "string", "allowed": ["grocery", "travel", "fuel", "online"]},
        "country": {"type": "string", "regex": "[A-Z]{2}"},
        "score": {"type": "float", "max_null_fraction": 0.05},
        "ts": {"type": "datetime"},
        "flag": {"type": "bool"},
        "count": {"type": "int", "min": 0},
        "ratio": {"type": "float", "min": 0, "max": 1},
    },
    "rows": {"min": 1},
}


def write_data(folder: Path, rows: int, files: int) -> None:
    rng = np.random.default_rng(0)
    per_file = rows // files
    for index in range(files):
        n = per_file
        table = pa.table({
            "id": np.arange(index * n, (index + 1) * n),
            "amount": rng.uniform(-1, 60_000, n),
            "hour": rng.integers(0, 30, n),
            "category": rng.choice(["grocery", "travel", "fuel", "online", "casino"], n),
            "country": rng.choice(["US", "CA", "gb", "DE"], n),
            "score": np.where(rng.random(n) < 0.02, np.nan, rng.random(n)),
            "ts": pd.date_range("2026-01-01", periods=n, freq="s"),
            "flag": rng.random(n) < 0.5,
            "count": rng.integers(-1, 100, n),
            "ratio": rng.random(n),
        })
        pq.write_table(table, folder / f"part-{index:03d}.parquet", row_group_size=65_536)


def frame_check(frame: pd.DataFrame) -> int:
    """The same rules the whole-frame way; the number of rule breaks found."""
    broken = 0
    broken += int((frame["id"] < 0).sum())
    broken += int(((frame["amount"] < 0) | (frame["amount"] > 50_000)).sum())
    broken += int(((frame["hour"] < 0) | (frame["hour"] > 23)).sum())
    broken += int((~frame["category"].isin(["grocery", "travel", "fuel", "online"])).sum())
    broken += int((~frame["country"].str.fullmatch("[A-Z]{2}")).sum())
    broken += int(frame["score"].isna().mean() > 0.05)
    broken += int(frame["ts"].isna().sum()) + int(frame["flag"].isna().sum())
    broken += int((frame["count"] < 0).sum())
    broken += int(((frame["ratio"] < 0) | (frame["ratio"] > 1)).sum())
    broken += sum(int(frame[c].isna().sum()) for c in frame.columns if c != "score")
    return broken


def stream_check(folder: str, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """In a fresh process: stream the source through the checker; (seconds, violations, Arrow
    high-water mark)."""
    contract = SchemaContract.model_validate(CONTRACT)
    started = time.perf_counter()
    checker = ContractChecker(contract)
    for part in iter_batches(folder):
        checker.update(part.batch, part.locate)
    report = checker.finish()
    results.put((time.perf_counter() - started, len(report.violations),
                 pa.default_memory_pool().max_memory()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="contract-bench-"))
    try:
        write_data(work, args.rows, args.files)
        cells = args.rows // args.files * args.files * len(CONTRACT["columns"])
        spawn = multiprocessing.get_context("spawn")
        results = spawn.Queue()
        child = spawn.Process(target=stream_check, args=(str(work), results))
        child.start()
        stream_s, violations, stream_peak = results.get()
        child.join()
        started = time.perf_counter()
        frame = pd.read_parquet(work)
        frame_check(frame)
        frame_s = time.perf_counter() - started
        frame_mb = frame.memory_usage(deep=True).sum() / 2**20
        print(json.dumps({
            "load_average": os.getloadavg(), "rows": args.rows, "columns": 10,
            "violations": violations,
            "stream_s": stream_s, "frame_s": frame_s,
            "stream_cells_per_s": cells / stream_s, "frame_cells_per_s": cells / frame_s,
            "speed_ratio": frame_s / stream_s,
            "stream_peak_arrow_mb": stream_peak / 2**20, "frame_mb": frame_mb,
        }, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
