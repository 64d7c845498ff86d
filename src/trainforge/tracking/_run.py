"""The run handle every stage writes to, `start_run`, which never leaves a run `running`, and
`active_run`.

    >>> import trainforge
    >>> with trainforge.start_run("fraud", params={"lr": 1e-3}) as run:  # doctest: +SKIP
    ...     for step in range(100):
    ...         run.log_metric("loss", 1 / (step + 1), step)
"""

from __future__ import annotations

import atexit
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from trainforge.config import Settings
from trainforge.entities import DataVersion, Run, RunStatus
from trainforge.errors import Conflict, NotFound, Preempted, Pruned, StoreUnavailable
from trainforge.storage import Store
from trainforge.storage.artifacts import ArtifactStore, open_artifact_store
from trainforge.tracking._code import CodeRead, git_state, record_code
from trainforge.tracking._defaults import default_store
from trainforge.tracking._environment import capture_environment, gpu_info
from trainforge.tracking._logger import MetricLogger
from trainforge.tracking._spill import (
    SpillFile,
    apply_data_version,
    apply_record,
    data_version_record,
    replay_directory,
)
from trainforge.tracking._system import SystemRecord
from trainforge.tracking._tensorboard import TensorBoardSink

if TYPE_CHECKING:
    from trainforge.session import Session

log = logging.getLogger(__name__)
_ACTIVE: list[RunHandle] = []
_ACTIVE_LOCK = threading.Lock()


def active_run() -> RunHandle | None:
    """The innermost run started in this process and not yet ended (any thread), or None."""
    with _ACTIVE_LOCK:
        return _ACTIVE[-1] if _ACTIVE else None


class RunHandle:
    """A live run: metrics, params, tags, summary, data version and artifacts of one run.

    Metric points go to a background `MetricLogger` (no I/O in `log_metric`; bulk inserts every
    `flush_interval` seconds or `flush_every` points; spill file and replay when the database is
    unreachable; heartbeats). `set_tags`, `set_summary` and `log_params` write at once, and when
    the database is unreachable they wait in the spill file too, in order. Every method is safe
    to call from any thread. Used as a context manager, the run ends `completed`, `preempted` on
    SIGTERM (raised as `Preempted` in the main thread) or a `Preempted` error, `pruned` on a
    `Pruned` error (a tuning trial stopped by its pruner), or `failed` with
    the error on any other exception or Ctrl+C.

    `RunHandle.attach(...)` attaches to an existing run (say, rank 0 of a torchrun job joining
    the launcher's run): it logs and sends heartbeats; `close()` (or interpreter exit) flushes
    and stops it without ending a run it does not own (`owns_run`). Only those entry points,
    `start_run` and `attach`, register the interpreter-exit hook; a handle built directly must
    be ended or closed by its owner.
    """

    def __init__(
        self,
        store: Store,
        run: Run,
        artifacts: ArtifactStore,
        flush_every: int = 1000,
        *,
        spill_dir: str | Path,
        flush_interval: float = 1.0,
        heartbeat_interval: float = 10.0,
        tensorboard_dir: str | Path | None = None,
        owns_run: bool = False,
    ) -> None:
        self.store = store
        self.artifacts = artifacts
        self.run_id = run.run_id
        self._owns_run = owns_run
        self._ended = False
        self._end_lock = threading.Lock()
        self._spill = SpillFile(Path(spill_dir) / f"{run.run_id}.jsonl")
        self._tensorboard = (TensorBoardSink(Path(tensorboard_dir) / run.run_id)
                             if tensorboard_dir is not None else None)
        self._logger = MetricLogger(
            store, run.run_id, self._spill, flush_interval=flush_interval,
            flush_points=flush_every, heartbeat_interval=heartbeat_interval,
            devices=max(1, gpu_info()["count"]), sink=self._tensorboard,
        )
        self._previous_sigterm: Any = None

    @classmethod
    def attach(cls, store: Store, run_id: str, artifacts: ArtifactStore, *,
               settings: Settings | None = None, **options: Any) -> RunHandle:
        """A handle on the stored run `run_id` (`NotFound` if there is none), closed at
        interpreter exit if still open; it spills to the spill folder of `settings` (default:
        `Settings.from_env()`) unless `spill_dir` is given."""
        options.setdefault("spill_dir", (settings or Settings.from_env()).spill_dir)
        handle = cls(store, store.get_run(run_id), artifacts, **options)
        atexit.register(handle._at_exit)
        return handle

    def info(self) -> Run:
        """The run as stored now (after a flush)."""
        self.flush()
        return self.store.get_run(self.run_id)

    def log_metric(self, key: str, value: float, step: int) -> None:
        """Queue one point; O(1), never waits on the database."""
        self._check_open()
        self._logger.add([(key, float(value), int(step), time.time())])

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Queue one point per key, all at `step` and the same timestamp."""
        self._check_open()
        now = time.time()
        self._logger.add([(k, float(v), int(step), now) for k, v in metrics.items()])

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every point logged so far is in the database or the spill file; True
        when nothing is waiting in the spill file."""
        return self._logger.flush(timeout)

    def log_params(self, params: dict[str, Any]) -> None:
        """Merge `params` into the run's params (top-level keys; a key given again is replaced)."""
        self._write_through("params", params, self.store.log_params)

    def set_tags(self, tags: dict[str, Any]) -> None:
        self._write_through("tags", tags, self.store.set_tags)

    def set_system(self, record: SystemRecord) -> None:
        """Merge `record`'s entries into the run's `system` namespace (what trainforge reads
        back: `_system.py`)."""
        self._write_through("system", record.entries(), self.store.set_system)

    def set_summary(self, metrics: dict[str, float]) -> None:
        """Final metrics (`Run.metrics`, listings, filters), winning over logged points."""
        values = {k: float(v) for k, v in metrics.items()}
        self._write_through("summary", values, self.store.set_summary_metrics)
        if self._tensorboard is not None:
            self.flush()  # the last step logged is written first: the summary's step
            self._tensorboard.summary(values)

    def set_data_version(self, version: DataVersion) -> None:
        """Record the data version (stored once) and link the run to it."""
        self._write_through("data_version", data_version_record(version),
                            partial(apply_data_version, self.store))

    def log_artifact(self, path: str | Path, name: str | None = None) -> str:
        return self.artifacts.put_file(self.run_id, path, name)

    def record_checkpoint(self, step: int, uri: str, epoch: int | None,
                          metrics: dict[str, float]) -> None:
        """Record a committed checkpoint (`trainforge checkpoints list`). Storage is the truth:
        with the database unreachable the record is skipped with a warning."""
        try:
            self.store.record_checkpoint(self.run_id, step, uri, epoch, metrics)
        except StoreUnavailable as exc:
            log.warning("run %s: checkpoint of step %d not recorded: %s", self.run_id, step, exc)

    def mark_checkpoint_deleted(self, step: int) -> None:
        """Record that storage confirmed the deletion of the checkpoint of `step`."""
        try:
            self.store.mark_checkpoint_deleted(self.run_id, step)
        except (StoreUnavailable, NotFound) as exc:
            log.warning("run %s: deletion of checkpoint %d not recorded: %s", self.run_id, step,
                        exc)

    def truncate_metrics(self, after_step: int, keys: Sequence[str] | None = None) -> int:
        """Delete the run's metric points after `after_step` (of the series in `keys` only,
        when given; points logged so far are flushed first); a run resuming from the
        checkpoint of that step logs them again. Returns how many were deleted."""
        self._check_open()
        self.flush()
        deleted = self.store.delete_metrics_after(self.run_id, after_step, keys)
        if self._tensorboard is not None and deleted:  # nothing to drop: no purge marker
            self._tensorboard.purge_after(after_step)
        return deleted

    def put_artifact(self, name: str, data: bytes) -> str:
        return self.artifacts.put_bytes(self.run_id, name, data)

    def artifact_uri(self, name: str = "") -> str:
        """Where the run's artifact `name` lives (its artifact folder for "")."""
        root = self.artifacts.run_uri(self.run_id)
        return f"{root}/{name}" if name else root

    def end(self, status: RunStatus = RunStatus.COMPLETED, error: str | None = None) -> Run | None:
        """Flush, stop the logger and record the end; the stored run, or None when the
        database is unreachable (the end then waits in the spill file with the points) or the
        handle had already ended."""
        with self._end_lock:
            if self._ended:
                return None
            self._ended = True
        unreported_hours = self._stop()
        ended_at = time.time()
        if not self._spill.exists():
            try:
                if unreported_hours:
                    self.store.heartbeat(self.run_id, unreported_hours)
                return self.store.end_run(self.run_id, status, error)
            except StoreUnavailable:
                pass
        self._spill.append([{
            "op": "end", "status": RunStatus(status).value, "error": error,
            "ended_at": _iso(ended_at), "device_hours": unreported_hours,
        }])
        log.warning("run %s: database unreachable; its end and pending points wait in %s "
                    "(trainforge runs replay)", self.run_id, self._spill.path)
        return None

    def close(self) -> None:
        """Flush and stop logging, leaving the run as it is (a handle attached to a run that
        another process ends); further logging is refused."""
        with self._end_lock:
            if self._ended:
                return
            self._ended = True
        unreported_hours = self._stop()
        if unreported_hours:
            self._write_through("device_hours", {"hours": unreported_hours},
                                lambda run_id, v: self.store.heartbeat(run_id, v["hours"]))

    def __enter__(self) -> RunHandle:
        if threading.current_thread() is threading.main_thread():
            self._previous_sigterm = signal.signal(signal.SIGTERM, _sigterm_as_preemption)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            if exc is None:
                self.end(RunStatus.COMPLETED)
            elif isinstance(exc, Preempted):
                self._end_quietly(str(exc), RunStatus.PREEMPTED)
            elif isinstance(exc, Pruned):
                self._end_quietly(str(exc), RunStatus.PRUNED)
            else:
                self._end_quietly(_describe(exc))
        finally:
            if self._previous_sigterm is not None:
                signal.signal(signal.SIGTERM, self._previous_sigterm)
                self._previous_sigterm = None

    # internals

    def _check_open(self) -> None:
        if self._ended:
            raise Conflict(f"run {self.run_id} has ended; start or attach a new handle to log")

    def _write_through(self, op: str, values: dict[str, Any],
                       call: Callable[[str, Any], None]) -> None:
        if not self._spill.exists():
            try:
                call(self.run_id, values)
                return
            except StoreUnavailable:
                pass
        self._spill.append([{"op": op, "values": values}])
        self._logger.wake()

    def _stop(self) -> float:
        with _ACTIVE_LOCK:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
        atexit.unregister(self._at_exit)
        hours = self._logger.close()
        if self._tensorboard is not None:
            self._tensorboard.close()
        return hours

    def _end_quietly(self, error: str, status: RunStatus = RunStatus.FAILED) -> None:
        """Mark the run failed (or `status`) without masking the exception that ends it."""
        try:
            self.end(status, error)
        except Exception:  # noqa: BLE001 - the original error matters more
            log.exception("run %s: could not record its failure", self.run_id)

    def _at_exit(self) -> None:
        if self._owns_run:
            self.end(RunStatus.COMPLETED)
        else:
            self.close()


def start_run(
    experiment: str,
    params: dict[str, Any] | None = None,
    parent: RunHandle | str | None = None,
    tags: dict[str, Any] | None = None,
    store: Store | None = None,
    artifacts: ArtifactStore | str | Path | None = None,
    *,
    settings: Settings | None = None,
    resume: str | None = None,
    run_id: str | None = None,
    code_dir: str | Path = ".",
    tensorboard_dir: str | Path | None = None,
    flush_interval: float = 1.0,
    flush_every: int = 1000,
    heartbeat_interval: float = 10.0,
) -> RunHandle:
    """Create a run in `experiment` (created if new) and return its live handle: a script's
    entry point.

    `settings` defaults to `Settings.from_env()`; `store` to the store of its database URL,
    `artifacts` to its artifact root; `parent` nests the run under another;
    `tensorboard_dir` also writes TensorBoard event files to `<tensorboard_dir>/<run_id>`.
    Records the git commit, dirty flag and what checks the code out again (`system.code`: the
    diff as artifact `environment/git.diff`, see `_code`), packages and machine. Spill files
    that earlier runs left are replayed in the background.
    `resume` reopens that stored run (status `running` again; params, metrics and
    device-hours carry on) instead of creating one. `run_id` names a new run (`Conflict` if a
    run has it; a random id by default). Use it as `with start_run(...) as run:`; without
    `with`, call `run.end()` (at interpreter exit an open run ends `completed`).
    """
    settings = settings or Settings.from_env()
    store = store if store is not None else default_store(settings)
    if not isinstance(artifacts, ArtifactStore):
        artifacts = open_artifact_store(artifacts or settings.artifact_root)
    replay_in_background(store, settings.spill_dir)
    handle = _open(experiment, store, artifacts, settings.spill_dir, _Opening(
        _RunIdentity(run_id, None, None, None), params, parent, tags, resume,
        code=CodeRead(Path(code_dir)), tensorboard_dir=tensorboard_dir,
        flush_interval=flush_interval,
        flush_every=flush_every, heartbeat_interval=heartbeat_interval))
    atexit.register(handle._at_exit)
    return handle


def open_run(
    experiment: str,
    session: Session,
    *,
    params: dict[str, Any] | None = None,
    parent: RunHandle | str | None = None,
    tags: dict[str, Any] | None = None,
    resume: str | None = None,
    job: str | None = None,
    run_id: str | None = None,
    pipeline_id: str | None = None,
    system: SystemRecord | None = None,
    spec_hash: str | None = None,
    code: CodeRead = CodeRead(),
    tensorboard_dir: str | Path | None = None,
) -> RunHandle:
    """`start_run` for code below an entry point, in its `session`, which ends the run
    itself (`with handle:`): no interpreter-exit hook and no spill replay (its entry point's
    session started that).

    `system` and `spec_hash` are what the system reads back (kept apart from `params` and
    `tags`); with `resume` and `job` (a multi-node job's key) the first launcher of the job
    reopens the run and the others get it as it runs (`RunStore.reopen_run`). `code` says
    where its code is read (the git state, the spec and the files to record, `_code`).
    """
    return _open(experiment, session.store, session.artifacts, session.settings.spill_dir,
                 _Opening(_RunIdentity(run_id, pipeline_id, system, spec_hash), params, parent,
                          tags, resume, job, code, tensorboard_dir))


@dataclass(frozen=True)
class _Opening:
    """What a new or resumed run is opened with, beside where it is recorded."""

    identity: _RunIdentity
    params: dict[str, Any] | None = None
    parent: RunHandle | str | None = None
    tags: dict[str, Any] | None = None
    resume: str | None = None
    job: str | None = None
    code: CodeRead = CodeRead()
    tensorboard_dir: str | Path | None = None
    flush_interval: float = 1.0
    flush_every: int = 1000
    heartbeat_interval: float = 10.0


def _open(experiment: str, store: Store, artifacts: ArtifactStore, spill_dir: Path,
          opening: _Opening) -> RunHandle:
    experiment_id = store.get_or_create_experiment(experiment).experiment_id
    if opening.resume is not None:
        run = _reopen(store, opening.resume, experiment_id, experiment, spill_dir, opening.job)
    else:
        run = _create(store, artifacts, experiment_id, opening.params, opening.parent,
                      opening.tags, opening.identity, opening.code)
    handle = RunHandle(store, run, artifacts, opening.flush_every, spill_dir=spill_dir,
                       flush_interval=opening.flush_interval,
                       heartbeat_interval=opening.heartbeat_interval,
                       tensorboard_dir=opening.tensorboard_dir, owns_run=True)
    with _ACTIVE_LOCK:
        _ACTIVE.append(handle)
    return handle


def replay_in_background(store: Store, spill_dir: Path) -> None:
    """Replay the spill files earlier runs left in `spill_dir` into `store`, on a daemon
    thread (an entry point starts it once; `trainforge runs replay` does it in the
    foreground)."""
    threading.Thread(target=_replay_quietly, args=(store, spill_dir), daemon=True,
                     name="trainforge-replay").start()


@dataclass(frozen=True)
class _RunIdentity:
    """What names a new run and what the system records on it beside the user's data."""

    run_id: str | None
    pipeline_id: str | None
    system: SystemRecord | None
    spec_hash: str | None


def _create(
    store: Store, artifacts: ArtifactStore, experiment_id: str,
    params: dict[str, Any] | None, parent: RunHandle | str | None, tags: dict[str, Any] | None,
    identity: _RunIdentity, code: CodeRead,
) -> Run:
    run_id = identity.run_id or uuid.uuid4().hex
    git = git_state(code.directory)
    environment = capture_environment()
    entry = record_code(git, artifacts, run_id, code, environment["packages"])
    system = identity.system or SystemRecord()
    if entry is not None:
        system = system.merged(SystemRecord(code=entry))
    return store.create_run(
        experiment_id, params=dict(params or {}), environment=environment,
        artifact_uri=artifacts.run_uri(run_id), run_id=run_id, git_commit=git.commit,
        git_dirty=git.dirty, pipeline_id=identity.pipeline_id, tags=tags,
        parent_run_id=parent.run_id if isinstance(parent, RunHandle) else parent,
        system=system.entries() or None, spec_hash=identity.spec_hash,
    )


def _reopen(store: Store, run_id: str, experiment_id: str, experiment: str,
            spill_dir: Path, job: str | None) -> Run:
    """Reopen a stored run, after replaying what its last attempt left in its spill file (an
    `end` record replayed later would end the resumed run)."""
    if store.get_run(run_id).experiment_id != experiment_id:
        raise Conflict(f"run {run_id!r} to resume is not in experiment {experiment!r}")
    SpillFile(spill_dir / f"{run_id}.jsonl").replay(partial(apply_record, store, run_id))
    return store.reopen_run(run_id, job)


def _replay_quietly(store: Store, spill_dir: Path) -> None:
    try:
        replay_directory(store, spill_dir)
    except Exception:  # noqa: BLE001 - the next start or `trainforge runs replay` tries again
        log.info("spill files not replayed yet", exc_info=True)


def _sigterm_as_preemption(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as `Preempted` in the main thread, so the run ends `preempted`, not abandoned."""
    raise Preempted(signal.Signals(signum).name)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl+C)"
    if isinstance(exc, SystemExit):
        return f"terminated (exit code {exc.code})"
    return f"{type(exc).__name__}: {exc}"


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat()
