"""Profile and drift figures: building mergeable profiles in one pass over record batches, and
drift computed from stored profiles alone, against the whole-data way (scipy's two-sample KS
and a numpy PSI on every raw column of both data sets), measured in one run.

Prints one JSON object (with the machine's load average: other work skews every figure):

- `profile_cells_per_s`: cells (rows x columns) profiled per second, one core.
- `drift_from_profiles_s`: `compute_drift` over every column of two stored profiles (the
  bytes read back from the database format included); independent of the row count. Goal:
  under 1 s for 100 columns.
- `drift_raw_s`: KS and PSI per column on the raw values of both data sets (both in memory);
  `drift_speedup` = raw / from profiles.
- `evidently_s`: Evidently's `DataDriftPreset` report on the same two data sets as pandas
  frames, where Evidently is importable (`make bench-peers`, then run this script with
  `.venv-peers/bin/python`); `evidently_speedup` = Evidently / from profiles. Goal: >= 100x.
  Both are null when Evidently is not installed.

    .venv/bin/python benchmarks/data_drift.py [--rows 1000000] [--columns 100]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pyarrow as pa
from scipy import stats

from trainforge.profiles import DatasetProfile, compute_drift


def table(rows: int, columns: int, shift: float, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({f"c{i:03d}": rng.normal(shift * (i % 2), 1 + i % 3, rows)
                     for i in range(columns)})


def raw_drift(reference: pa.Table, current: pa.Table) -> None:
    for name in reference.column_names:
        a, b = reference.column(name).to_numpy(), current.column(name).to_numpy()
        stats.ks_2samp(a, b)
        edges = np.quantile(a, np.linspace(0, 1, 11))
        r = np.maximum(np.histogram(a, edges)[0] / len(a), 1e-4)
        c = np.maximum(np.histogram(b, edges)[0] / len(b), 1e-4)
        float(((c - r) * np.log(c / r)).sum())


def evidently_drift(reference: pa.Table, current: pa.Table) -> float | None:
    """Seconds Evidently's DataDriftPreset takes over both tables (its current API, else its
    legacy one); None when Evidently is not installed."""
    try:
        import evidently
    except ImportError:
        return None
    reference_frame, current_frame = reference.to_pandas(), current.to_pandas()
    started = time.perf_counter()
    if hasattr(evidently, "Report"):
        from evidently.presets import DataDriftPreset

        evidently.Report([DataDriftPreset()]).run(current_frame, reference_frame)
    else:
        from evidently.metric_preset import DataDriftPreset
        from evidently.report import Report

        Report(metrics=[DataDriftPreset()]).run(reference_data=reference_frame,
                                                current_data=current_frame)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--columns", type=int, default=100)
    args = parser.parse_args()
    reference, current = (table(args.rows, args.columns, 0.0, 1),
                          table(args.rows, args.columns, 0.5, 2))
    started = time.perf_counter()
    reference_profile = DatasetProfile.from_batches(reference.to_batches(max_chunksize=65_536))
    profile_s = time.perf_counter() - started
    current_profile = DatasetProfile.from_batches(current.to_batches(max_chunksize=65_536))
    stored = (reference_profile.to_bytes(), current_profile.to_bytes())
    started = time.perf_counter()
    report = compute_drift(DatasetProfile.from_bytes(stored[0], "reference"),
                           DatasetProfile.from_bytes(stored[1], "current"))
    drift_s = time.perf_counter() - started
    started = time.perf_counter()
    raw_drift(reference, current)
    raw_s = time.perf_counter() - started
    evidently_s = evidently_drift(reference, current)
    print(json.dumps({
        "load_average": os.getloadavg(), "rows": args.rows, "columns": args.columns,
        "profile_s": profile_s, "profile_cells_per_s": args.rows * args.columns / profile_s,
        "drift_from_profiles_s": drift_s, "drift_raw_s": raw_s,
        "drift_speedup": raw_s / drift_s, "evidently_s": evidently_s,
        "evidently_speedup": None if evidently_s is None else evidently_s / drift_s,
        "drifted_columns": len(report.drifted_columns),
        "profile_bytes": len(stored[0]),
    }, indent=2))


if __name__ == "__main__":
    main()
