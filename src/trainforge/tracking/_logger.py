"""The metric logger: points buffered in memory, written by one background thread in bulk.

Rules:
- `add` is O(1) and does no I/O: it appends to a list under a lock held for that append only.
  The one exception is overflow: when `max_buffered` points are waiting (the database has
  been stuck long enough to fill the buffer), the caller appends them to the spill file itself,
  so memory stays bounded and nothing is dropped;
- the thread writes every `flush_interval` seconds, or as soon as `flush_points` points are
  waiting, in batches of at most `batch_points`, each with a fresh batch id;
- a batch the store refuses (unreachable, or any other error) goes to the spill file; while
  the spill file holds anything, new batches go there too, after it, and every cycle first tries
  to replay it: the database receives every point exactly once (batch ids), in any case;
- every `heartbeat_interval` seconds the thread sets the run's heartbeat and adds the
  device-hours since the last one that landed (wall hours × `devices`);
- `flush()` waits for one whole cycle that starts after the call: every point added before it
  is then in the database or in the spill file, and the spill file has had a replay attempt;
  `close()` flushes, sends a last heartbeat and stops the thread.

Thread safety: `add`, `flush` and `wake` may be called from any thread; `close` once.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable

from trainforge.entities import MetricPoint
from trainforge.storage import RunRecordStore
from trainforge.tracking._spill import SpillFile, apply_record, metrics_record

log = logging.getLogger(__name__)
Point = tuple[str, float, int, float]  # key, value, step, timestamp: cheaper than a dataclass


class MetricLogger:
    """Writes the points of one run from a daemon thread; see the module docstring."""

    def __init__(
        self,
        store: RunRecordStore,
        run_id: str,
        spill: SpillFile,
        *,
        flush_interval: float = 1.0,
        flush_points: int = 1000,
        batch_points: int = 50_000,
        max_buffered: int = 1_000_000,
        heartbeat_interval: float = 10.0,
        devices: int = 1,
        sink: Callable[[list[MetricPoint]], None] | None = None,
    ) -> None:
        self.store, self.run_id, self.spill = store, run_id, spill
        self._flush_interval, self._flush_points = flush_interval, flush_points
        self._batch_points, self._max_buffered = batch_points, max_buffered
        self._heartbeat_interval, self._devices, self._sink = heartbeat_interval, devices, sink
        self._lock = threading.Lock()
        self._cycled = threading.Condition(self._lock)
        self._buffer: list[Point] = []
        self._started = self._finished = 0  # cycles of the thread
        self._wake = threading.Event()
        self._stopping = False
        self._warned = False
        self._beat_at = time.monotonic()  # device time up to here is already reported
        self._thread = threading.Thread(target=self._loop, name=f"trainforge-logger-{run_id[:8]}",
                                        daemon=True)
        self._thread.start()

    def add(self, points: list[Point]) -> None:
        """Queue points; O(len(points)), no I/O (except overflow, see the module docstring)."""
        with self._lock:
            self._buffer.extend(points)
            waiting = len(self._buffer)
            overflow = self._buffer if waiting >= self._max_buffered else None
            if overflow is not None:
                self._buffer = []
        if overflow is not None:
            self._spill_points(overflow)
        elif waiting >= self._flush_points:
            self._wake.set()

    def wake(self) -> None:
        """Ask the thread for a cycle now (for example, to replay the spill file)."""
        self._wake.set()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every point added so far is in the database or the spill file; True when
        nothing waits in the spill file (everything reached the database)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cycled:
            target = self._started + 1
            self._wake.set()
            while self._finished < target and self._thread.is_alive():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cycled.wait(0.5 if left is None else min(left, 0.5))
        return not self.spill.exists()

    def close(self) -> float:
        """Flush, send a last heartbeat and stop the thread; return device-hours that could not
        be reported (the database was unreachable), for the caller to record with the end."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        return self._beat()

    # the thread

    def _loop(self) -> None:
        next_beat = time.monotonic() + self._heartbeat_interval
        while True:
            until_beat = next_beat - time.monotonic()
            self._wake.wait(max(0.0, min(self._flush_interval, until_beat)))
            self._wake.clear()
            stopping = self._stopping
            try:
                self._cycle()
                if time.monotonic() >= next_beat and not stopping:
                    self._beat()
                    next_beat = time.monotonic() + self._heartbeat_interval
            except Exception:  # noqa: BLE001 - the thread must outlive any one failure
                log.exception("run %s: metric logger cycle failed", self.run_id)
            if stopping:
                return

    def _cycle(self) -> None:
        with self._lock:
            taken, self._buffer = self._buffer, []
            self._started += 1
        try:
            self._write_cycle(taken)
        finally:
            with self._cycled:
                self._finished += 1
                self._cycled.notify_all()

    def _write_cycle(self, taken: list[Point]) -> None:
        points = [MetricPoint(*p) for p in taken]
        if points and self._sink is not None:
            self._write_sink(points)
        pending = self.spill.exists() and not self._replay()
        for start in range(0, len(points), self._batch_points):
            batch = points[start:start + self._batch_points]
            batch_id = uuid.uuid4().hex
            if not pending:
                pending = not self._write(batch, batch_id)
            if pending:
                self.spill.append([metrics_record(batch_id, batch)])

    def _write(self, batch: list[MetricPoint], batch_id: str) -> bool:
        try:
            self.store.log_metrics(self.run_id, batch, batch_id)
            return True
        except Exception as exc:  # noqa: BLE001 - whatever the store says, the points are kept
            self._warn(f"{len(batch)} points go to {self.spill.path} until it is back ({exc})")
            return False

    def _replay(self) -> bool:
        try:
            count = self.spill.replay(lambda record: apply_record(self.store, self.run_id, record))
        except Exception:  # noqa: BLE001 - still unreachable: stay on the spill file
            return False
        if count:
            log.warning("run %s: replayed %d spilled records", self.run_id, count)
        self._warned = False
        return True

    def _beat(self) -> float:
        now = time.monotonic()
        hours = (now - self._beat_at) / 3600 * self._devices
        try:
            self.store.heartbeat(self.run_id, hours)
        except Exception as exc:  # noqa: BLE001 - report these hours with the next heartbeat
            self._warn(f"heartbeat failed ({exc})")
            return hours
        self._beat_at = now
        return 0.0

    def _write_sink(self, points: list[MetricPoint]) -> None:
        try:
            self._sink(points)  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - a side channel must not stop the database writes
            log.exception("run %s: writing metric points to the sink failed", self.run_id)

    def _spill_points(self, points: list[Point]) -> None:
        batch = [MetricPoint(*p) for p in points]
        self.spill.append([metrics_record(uuid.uuid4().hex, batch)])
        self._wake.set()

    def _warn(self, message: str) -> None:
        if not self._warned:
            log.warning("run %s: database unreachable: %s", self.run_id, message)
            self._warned = True
