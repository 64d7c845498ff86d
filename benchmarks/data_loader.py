"""Streaming loader against "pandas reads everything, then tensors", and contract + profile in
one pass.

    python benchmarks/data_loader.py [--rows 20000000] [--folder DIR]

Writes `--rows` rows of a 12-column table (10 numbers, a category, a 0/1 target) as Parquet
files of 1M rows in row groups of 128k rows (about 100 bytes a row), unless `--folder` holds
them already. Each loading path runs in a process of its own, so its peak RSS is its own:
- `pandas`: `pd.read_parquet` of every file, concatenated, the fitted feature pipeline applied
  to the whole frame, tensors made, then batches of 1,024 rows sliced from them
  (`TensorBatches`, the trainer's in-memory path);
- `streaming`: the row groups planned, a random split decided (98% train), then
  `StreamingSource.make_batches(1024).epoch(0)` (one window of 65,536 rows at a time read and
  featurised), on 0 DataLoader workers.
Both time reading, featurising and batching every row they train on once (the pipeline is
fitted beforehand, on one row group, and not timed). The JSON gives rows/s and peak RSS of each,
and their ratios. Goals: streaming rows/s >= pandas'; streaming peak RSS < 1 GB.

`contract_profile` times one pass over every file's record batches that feeds both a schema
contract (`ContractChecker`) and a profile (`DatasetProfile`), in one process: cells/s per core.
Goal: >= 5 million.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

ROWS_PER_FILE = 1_000_000
ROW_GROUP = 131_072
BATCH = 1_024
NUMBERS = [f"x{i}" for i in range(10)]


def write_data(folder: Path, rows: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index, start in enumerate(range(0, rows, ROWS_PER_FILE)):
        n = min(ROWS_PER_FILE, rows - start)
        rng = np.random.default_rng(index)
        frame = pd.DataFrame({name: rng.normal(size=n) for name in NUMBERS})
        frame["kind"] = rng.choice(["a", "b", "c", "d"], n)
        frame["label"] = (rng.random(n) < 0.2).astype(np.int64)
        frame.to_parquet(folder / f"part-{index:04d}.parquet", row_group_size=ROW_GROUP,
                         index=False)


def fitted_pipeline(folder: Path):  # noqa: ANN201 - a FeaturePipeline
    from trainforge.config import FeaturesSpec
    from trainforge.features import FeaturePipeline

    spec = FeaturesSpec(transforms=[{"type": "standardize", "columns": NUMBERS},
                                    {"type": "one_hot", "columns": ["kind"]}])
    first = pq.ParquetFile(sorted(folder.glob("*.parquet"))[0]).read_row_group(0).to_pandas()
    return FeaturePipeline.from_spec(spec).fit(first)


def pandas_path(folder: str, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    import torch

    from trainforge.train import TensorBatches

    pipeline = fitted_pipeline(Path(folder))
    start = time.perf_counter()
    frame = pd.concat([pd.read_parquet(p) for p in sorted(Path(folder).glob("*.parquet"))],
                      ignore_index=True)
    features = torch.from_numpy(pipeline.transform(frame))
    targets = torch.from_numpy(frame["label"].to_numpy(dtype=np.float32))
    del frame
    rows = 0
    for batch, _ in TensorBatches(features, targets, BATCH, shuffle=True).epoch(0):
        rows += len(batch)
    results.put(_figures(rows, time.perf_counter() - start))


def streaming_path(folder: str, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    import torch

    from trainforge.config import SplitSpec
    from trainforge.ingest import list_source_files
    from trainforge.streaming import (
        RowGroupPlan,
        StreamingSource,
        TargetEncoder,
        plan_split,
    )

    pipeline = fitted_pipeline(Path(folder))
    start = time.perf_counter()
    plan = RowGroupPlan.from_listing(list_source_files(folder))
    split = plan_split(plan, SplitSpec(method="random", val_fraction=0.01, test_fraction=0.01))
    source = StreamingSource(split, pipeline, TargetEncoder("label", "binary"))
    rows = 0
    for batch, _ in source.make_batches(BATCH, torch.device("cpu"), shuffle=True).epoch(0):
        rows += len(batch)
    results.put(_figures(rows, time.perf_counter() - start))


def contract_profile(folder: str, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    from trainforge.ingest import iter_batches
    from trainforge.profiles import DatasetProfile
    from trainforge.validate import ColumnRule, ContractChecker, SchemaContract

    contract = SchemaContract(columns={
        **{name: ColumnRule(type="float", min=-10, max=10) for name in NUMBERS},
        "kind": ColumnRule(type="string", allowed=["a", "b", "c", "d"]),
        "label": ColumnRule(type="int", allowed=[0, 1]),
    })
    checker = ContractChecker(contract)
    cells = 0
    start = time.perf_counter()

    def checked():  # noqa: ANN202
        nonlocal cells
        for part in iter_batches(folder):
            checker.update(part.batch, part.locate)
            cells += part.batch.num_rows * part.batch.num_columns
            yield part.batch

    DatasetProfile.from_batches(checked())
    report = checker.finish()
    seconds = time.perf_counter() - start
    results.put({"cells": cells, "seconds": round(seconds, 2),
                 "cells_per_s_per_core": round(cells / seconds), "passed": report.passed})


def _figures(rows: int, seconds: float) -> dict[str, float]:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"rows": rows, "seconds": round(seconds, 2), "rows_per_s": round(rows / seconds),
            "peak_rss_mb": round(peak / 2**20)}


def run(target, folder: str) -> dict[str, float]:  # noqa: ANN001
    results: multiprocessing.Queue = multiprocessing.get_context("spawn").Queue()  # type: ignore[type-arg]
    process = multiprocessing.get_context("spawn").Process(target=target,
                                                           args=(folder, results))
    process.start()
    figures = results.get()
    process.join()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--folder", type=Path, default=None,
                        help="keep the data here (written when empty)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="trainforge-bench-data-"))
    folder = args.folder or scratch / "data"
    try:
        if not any(folder.glob("*.parquet")):
            write_data(folder, args.rows)
        size = sum(p.stat().st_size for p in folder.glob("*.parquet"))
        pandas = run(pandas_path, str(folder))
        streaming = run(streaming_path, str(folder))
        one_pass = run(contract_profile, str(folder))
        print(json.dumps({
            "rows": pandas["rows"], "parquet_mb": round(size / 2**20),
            "pandas": pandas, "streaming": streaming,
            "throughput_ratio": round(streaming["rows_per_s"] / pandas["rows_per_s"], 2),
            "peak_rss_ratio": round(streaming["peak_rss_mb"] / pandas["peak_rss_mb"], 3),
            "goals": {"throughput_ratio_min": 1.0, "streaming_peak_rss_mb_max": 1024,
                      "contract_profile_cells_per_s_per_core_min": 5_000_000},
            "contract_profile": one_pass,
        }, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
