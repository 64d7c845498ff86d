"""Spill files: what a run could not write to the database, kept on local disk until replayed.

One file per run, `<spill dir>/<run_id>.jsonl`, one JSON record per line, in the order the run
produced them:

    {"op": "metrics", "batch": "<id>", "points": [[key, value, step, timestamp], ...]}
    {"op": "tags" | "system" | "summary" | "params", "values": {...}}
    {"op": "data_version", "values": {"data_version_id": ..., "source": ..., "files": [...], ...}}
    {"op": "device_hours", "values": {"hours": 0.1}}
    {"op": "end", "status": "completed", "error": null, "ended_at": "<iso>", "device_hours": 0.1}

Rules:
- every access holds an exclusive `flock` on the file, so the run's own logger, another
  process replaying, and `trainforge runs replay` never interleave; a holder that finds the path
  replaced (unlinked or rewritten by a replayer) while it waited opens the new file instead;
- `append` writes whole lines and fsyncs before returning: a record appended is durable;
- `replay` applies records in order and deletes the file when all succeeded; on a failure it
  keeps the records not yet applied and re-raises. Applying a record twice is harmless (metric
  batches carry an id the store stores once; the other records set values), so a replay cut
  short by a crash just runs again (only device-hours, which add up, could then count twice);
- a torn last line (the process died mid-write) is skipped.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from trainforge.entities import DataVersion, MetricPoint, RunStatus
from trainforge.errors import NotFound
from trainforge.storage import RunRecordStore

log = logging.getLogger(__name__)
Record = dict[str, Any]


class SpillFile:
    """The spill file of one run; safe to use from any thread and any process."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def append(self, records: list[Record]) -> None:
        """Append `records` and fsync: when this returns they survive a crash."""
        data = "".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked(create=True) as fd:
            if fd is not None:
                os.write(fd, data.encode())
                os.fsync(fd)

    def replay(self, apply: Callable[[Record], None]) -> int:
        """Apply every record in order, then delete the file; the number applied.

        On an exception from `apply`, the records from the failing one on are kept and the
        exception propagates."""
        with self._locked(create=False) as fd:
            if fd is None:
                return 0
            records = _parse(self.path.read_bytes())
            for done, record in enumerate(records):
                try:
                    apply(record)
                except BaseException:
                    self._rewrite(records[done:])
                    raise
            self.path.unlink()
            return len(records)

    @contextmanager
    def _locked(self, create: bool) -> Iterator[int | None]:
        flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
        while True:
            try:
                fd = os.open(self.path, flags, 0o600)
            except FileNotFoundError:
                yield None
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, self.path):
                break
            os.close(fd)  # replaced while we waited: lock the file now at the path
        try:
            yield fd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _rewrite(self, records: list[Record]) -> None:
        temporary = self.path.with_suffix(".jsonl.tmp")
        with open(temporary, "w") as out:
            out.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _parse(data: bytes) -> list[Record]:
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        try:
            records.append(json.loads(line))
        except ValueError:
            log.warning("spill file: skipping unreadable line %d (torn write)", number)
    return records


def metrics_record(batch_id: str, points: list[MetricPoint]) -> Record:
    return {"op": "metrics", "batch": batch_id,
            "points": [[p.key, p.value, p.step, p.timestamp] for p in points]}


def apply_record(store: RunRecordStore, run_id: str, record: Record) -> None:
    """Write one spilled record to the store (idempotent, see the module docstring)."""
    op = record["op"]
    if op == "metrics":
        points = [MetricPoint(k, float(v), int(s), float(t)) for k, v, s, t in record["points"]]
        store.log_metrics(run_id, points, record["batch"])
    elif op == "tags":
        store.set_tags(run_id, record["values"])
    elif op == "system":
        store.set_system(run_id, record["values"])
    elif op == "summary":
        store.set_summary_metrics(run_id, record["values"])
    elif op == "params":
        store.log_params(run_id, record["values"])
    elif op == "data_version":
        apply_data_version(store, run_id, record["values"])
    elif op == "device_hours":
        store.heartbeat(run_id, record["values"]["hours"])
    elif op == "end":
        if record.get("device_hours"):
            store.heartbeat(run_id, record["device_hours"])
        store.end_run(run_id, RunStatus(record["status"]), record["error"],
                      datetime.fromisoformat(record["ended_at"]))
    else:
        raise ValueError(f"unknown spill record {op!r}")


def data_version_record(version: DataVersion) -> dict[str, Any]:
    """The JSON values of a `data_version` record."""
    return {"data_version_id": version.data_version_id, "source": version.source,
            "files": list(version.files), "num_rows": version.num_rows}


def apply_data_version(store: RunRecordStore, run_id: str, values: dict[str, Any]) -> None:
    """Store the data version of `values` (once) and link run `run_id` to it."""
    version = DataVersion(values["data_version_id"], values["source"], tuple(values["files"]),
                          int(values["num_rows"]))
    store.put_data_version(version)
    store.set_data_version(run_id, version.data_version_id)


def replay_directory(store: RunRecordStore, directory: Path) -> dict[str, int]:
    """Replay every spill file under `directory`: run id → records applied. A file whose run
    is not in this database is left alone (it may belong to another database); an unreachable
    database raises `StoreUnavailable` after keeping what was not applied."""
    replayed: dict[str, int] = {}
    for path in sorted(directory.glob("*.jsonl")) if directory.is_dir() else []:
        run_id = path.name.removesuffix(".jsonl")
        try:
            replayed[run_id] = SpillFile(path).replay(partial(apply_record, store, run_id))
        except NotFound:
            log.warning("spill file %s: run %s is not in %r; left in place", path, run_id, store)
    return replayed
