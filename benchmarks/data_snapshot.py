"""Data snapshot figures: `trainforge data snapshot` of many small files, then a no-op
re-snapshot, against the naive way of versioning the same files (read and sha256 every file,
copy it under its hash) measured in the same run on the same disk.

Prints one JSON object (with the machine's load average: other work skews every figure):

- `snapshot_s`: the first snapshot of `--files` small CSV files (hash, count rows, store each
  object, write the manifest, record the version). Goal for 100,000 files: under 30 s.
- `resnapshot_s`: the same folder again, nothing changed (stat cache hits, objects present).
  Goal: under 2 s for 100,000 files.
- `snapshot_ratio` = snapshot / naive copy-by-hash; `resnapshot_ratio` = re-snapshot / naive
  (the naive way has no cache: it reads every byte again).
- `dvc_add_s`, `dvc_readd_s`: `dvc add` of the same folder into a fresh DVC repository (no
  git), then again with nothing changed, where DVC is importable (`make bench-peers`, then run
  this script with `.venv-peers/bin/python`); `dvc_ratio` = dvc add / snapshot and
  `dvc_readd_ratio` = dvc re-add / re-snapshot. All null when DVC is not installed.

    .venv/bin/python benchmarks/data_snapshot.py [--files 100000]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trainforge.ingest._hashing import HashCache
from trainforge.storage import open_store
from trainforge.storage.objects import open_object_store
from trainforge.versioning import DataRepository


def write_files(folder: Path, count: int) -> None:
    for index in range(count):
        sub = folder / f"part={index % 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"rows-{index:06d}.csv").write_text(f"id,value\n{index},{index * 0.5}\n"
                                                   f"{index + 1},{index * 1.5}\n")


def naive(folder: Path, objects: Path) -> float:
    started = time.perf_counter()
    for path in sorted(folder.rglob("*.csv")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        target = objects / digest[:2] / digest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return time.perf_counter() - started


def dvc_add(folder: Path) -> tuple[float, float] | None:
    """Seconds of `dvc add FOLDER` in a new DVC repository (no git) made in its parent folder
    (DVC adds only what is inside its repository), then of a second `dvc add` with nothing
    changed; None when DVC is not installed."""
    if importlib.util.find_spec("dvc") is None:
        return None

    def dvc(*args: str) -> float:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=folder.parent,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"dvc {' '.join(args)} failed: {done.stderr[-2000:]}")
        return time.perf_counter() - started

    dvc("init", "--no-scm")
    return dvc("add", folder.name), dvc("add", folder.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="snapshot-bench-"))
    try:
        write_files(work / "data", args.files)
        naive_s = naive(work / "data", work / "naive")
        store = open_store(f"sqlite:///{work / 'trainforge.db'}")
        repository = DataRepository(open_object_store(work / "objects"), store,
                                    HashCache(work / "hashes.sqlite"))
        started = time.perf_counter()
        first = repository.snapshot(str(work / "data"), name="bench")
        snapshot_s = time.perf_counter() - started
        started = time.perf_counter()
        again = repository.snapshot(str(work / "data"), name="bench")
        resnapshot_s = time.perf_counter() - started
        assert again.version.data_version_id == first.version.data_version_id
        assert again.uploaded == 0
        store.close()
        dvc_s = dvc_add(work / "data")
        print(json.dumps({
            "load_average": os.getloadavg(), "files": args.files,
            "snapshot_s": snapshot_s, "resnapshot_s": resnapshot_s, "naive_s": naive_s,
            "snapshot_ratio": snapshot_s / naive_s, "resnapshot_ratio": resnapshot_s / naive_s,
            "dvc_add_s": None if dvc_s is None else dvc_s[0],
            "dvc_readd_s": None if dvc_s is None else dvc_s[1],
            "dvc_ratio": None if dvc_s is None else dvc_s[0] / snapshot_s,
            "dvc_readd_ratio": None if dvc_s is None else dvc_s[1] / resnapshot_s,
        }, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
