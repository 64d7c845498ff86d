"""The run handle every stage writes to, and `start_run`, which never leaves a run `running`."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainforge.entities import DataVersion, MetricPoint, Run, RunStatus
from trainforge.storage.artifacts import ArtifactStore
from trainforge.tracking._environment import capture_environment, git_state
from trainforge.tracking._store import TrackingStore


class RunHandle:
    """A live run: metrics, tags, summary, data version and artifacts of one run.

    Metric points are buffered and written in one bulk insert every `flush_every` points and on
    `flush()` / `end()`. A handle belongs to the thread that uses it.
    """

    def __init__(
        self, store: TrackingStore, run: Run, artifacts: ArtifactStore, flush_every: int = 1000
    ) -> None:
        self.store = store
        self.artifacts = artifacts
        self.run_id = run.run_id
        self._flush_every = flush_every
        self._buffer: list[MetricPoint] = []

    def info(self) -> Run:
        """The run as stored now."""
        self.flush()
        return self.store.get_run(self.run_id)

    def log_metric(self, key: str, value: float, step: int) -> None:
        self._buffer.append(MetricPoint(key, float(value), int(step), time.time()))
        if len(self._buffer) >= self._flush_every:
            self.flush()

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        now = time.time()
        self._buffer.extend(MetricPoint(k, float(v), int(step), now) for k, v in metrics.items())
        if len(self._buffer) >= self._flush_every:
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            points, self._buffer = self._buffer, []
            self.store.log_metrics(self.run_id, points)

    def set_tags(self, tags: dict[str, Any]) -> None:
        self.store.set_tags(self.run_id, tags)

    def set_summary(self, metrics: dict[str, float]) -> None:
        """Final metrics shown in listings (`runs.metrics`), merged into earlier ones."""
        self.store.set_summary_metrics(self.run_id, {k: float(v) for k, v in metrics.items()})

    def set_data_version(self, version: DataVersion) -> None:
        self.store.put_data_version(version)
        self.store.set_data_version(self.run_id, version.data_version_id)

    def log_artifact(self, path: str | Path, name: str | None = None) -> str:
        return self.artifacts.put_file(self.run_id, path, name)

    def put_artifact(self, name: str, data: bytes) -> str:
        return self.artifacts.put_bytes(self.run_id, name, data)

    def end(self, status: RunStatus = RunStatus.COMPLETED, error: str | None = None) -> Run:
        self.flush()
        return self.store.end_run(self.run_id, status, error)


@contextlib.contextmanager
def start_run(
    store: TrackingStore,
    artifacts: ArtifactStore,
    experiment: str,
    params: dict[str, Any],
    pipeline_id: str | None = None,
    code_dir: str | Path = ".",
) -> Iterator[RunHandle]:
    """Open a tracked run; it ends `completed`, or `failed` with the error on any exception,
    Ctrl+C or SIGTERM."""
    exp = store.get_or_create_experiment(experiment)
    git = git_state(code_dir)
    run_id = uuid.uuid4().hex
    run = store.create_run(
        exp.experiment_id,
        params=params,
        environment=capture_environment(),
        artifact_uri=artifacts.run_uri(run_id),
        run_id=run_id,
        git_commit=git.commit,
        git_dirty=git.dirty,
        pipeline_id=pipeline_id,
    )
    handle = RunHandle(store, run, artifacts)
    try:
        with _sigterm_as_exit():
            yield handle
    except BaseException as exc:
        _end_quietly(handle, _describe(exc))
        raise
    handle.end(RunStatus.COMPLETED)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl+C)"
    if isinstance(exc, SystemExit):
        return f"terminated (exit code {exc.code})"
    return f"{type(exc).__name__}: {exc}"


def _end_quietly(handle: RunHandle, error: str) -> None:
    """Mark the run failed even when flushing its last metrics fails too."""
    try:
        handle.flush()
    except Exception:  # noqa: BLE001 - the original error matters more; the status must land
        handle._buffer.clear()
    handle.store.end_run(handle.run_id, RunStatus.FAILED, error)


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """Turn SIGTERM into SystemExit(143) in the main thread, so the run is ended, not abandoned."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
