"""Optuna's journal storage in the tracking database: `SqlJournalStorage` over
`SqlJournalBackend` (table `tuning_journal`), with heartbeats (table `tuning_heartbeats`).

Why a journal and not Optuna's RDB storage: RDBStorage keeps its own `alembic_version` table,
which clashes with ours in the same database; and a journal is read incrementally (each worker
replays only the operations it has not seen), so the cost of a trial stays flat as a study grows.

Rules:
- log numbers are dense from 0 and totally ordered across processes: `append_logs` takes a
  database-wide write lock (`BEGIN IMMEDIATE` on SQLite, a transaction-scoped advisory lock on
  PostgreSQL), reads the highest number and inserts after it in the same transaction, so the
  writers commit in number order and a reader always sees a gap-free prefix;
- `read_logs(n)` returns the operations numbered n and above, in order;
- a heartbeat is one row per trial id, replaced on each beat; a RUNNING trial whose latest
  heartbeat is older than `grace_period_s` is stale: Optuna's `fail_stale_trials` fails it, and
  `failed_trial_callback` (such as `RetryHeartbeatStaleTrialCallback`) enqueues its retry. As in
  Optuna, a trial that never beat is never stale: an ask/tell client sharing the study keeps its
  trials running for as long as it likes;
- both pickle by URL and settings (Optuna hands a storage to other processes): the copy opens
  its own engine on the same, already migrated database; no connection travels;
- connection failures and lock waits that timed out raise `StoreUnavailable`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import optuna
from optuna.storages._heartbeat import BaseHeartbeat  # not exported; the documented base
from optuna.storages.journal import BaseJournalBackend, JournalStorage
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy import Connection, func, insert, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import InterfaceError, OperationalError

from trainforge.errors import StoreError, StoreUnavailable
from trainforge.storage.db import WRITE, make_engine, migrate, shown_url
from trainforge.storage.tables import TuningHeartbeatRow, TuningJournalRow, as_utc, utcnow

# Key of the PostgreSQL advisory lock serialising journal appends ("tfjourna" in ASCII).
_PG_JOURNAL_LOCK = 0x74666A6F75726E61
FailedTrialCallback = Callable[[optuna.Study, FrozenTrial], None]


class SqlJournalBackend(BaseJournalBackend):
    """Optuna's journal as rows of `tuning_journal` in the database at `url` (migrated when
    opened). Safe to share between threads and processes."""

    def __init__(self, url: str) -> None:
        if url.startswith(("http://", "https://")):
            raise StoreError(f"tuning needs the database itself, and {shown_url(url)} is "
                             "trainforge server's address: the study's journal does not "
                             "travel through the server yet; set TRAINFORGE_DB to the team's "
                             "database URL on the machines that tune")
        self._connect(url)
        with self._translated():
            migrate(self._engine)

    def _connect(self, url: str) -> None:
        self._url = url
        self._engine = make_engine(url)
        self._postgres = self._engine.dialect.name == "postgresql"
        self._writer = self._engine.execution_options(**{WRITE: True})

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self._url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._connect(state["url"])

    def __repr__(self) -> str:
        return f"SqlJournalBackend({shown_url(self._url)!r})"

    def close(self) -> None:
        """Close every pooled connection."""
        self._engine.dispose()

    def read_logs(self, log_number_from: int) -> list[dict[str, Any]]:
        query = (select(TuningJournalRow.body)
                 .where(TuningJournalRow.log_number >= log_number_from)
                 .order_by(TuningJournalRow.log_number))
        with self._translated(), self._engine.connect() as connection:
            return [json.loads(body) for body in connection.scalars(query)]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        if not logs:
            return
        with self._locked() as connection:
            last = connection.scalar(select(func.max(TuningJournalRow.log_number)))
            first = -1 if last is None else last
            connection.execute(insert(TuningJournalRow), [
                {"log_number": first + 1 + i, "body": json.dumps(log)}
                for i, log in enumerate(logs)])

    def record_heartbeat(self, trial_id: int) -> None:
        """The trial is alive now."""
        values = {"trial_id": trial_id, "heartbeat_at": utcnow()}
        dialect = postgresql if self._postgres else sqlite
        statement = dialect.insert(TuningHeartbeatRow).values(values).on_conflict_do_update(
            index_elements=["trial_id"], set_={"heartbeat_at": values["heartbeat_at"]})
        with self._translated(), self._writer.begin() as connection:
            connection.execute(statement)

    def last_heartbeats(self, trial_ids: list[int]) -> dict[int, datetime]:
        """The latest heartbeat (UTC) of each of `trial_ids` that has one."""
        if not trial_ids:
            return {}
        query = select(TuningHeartbeatRow.trial_id, TuningHeartbeatRow.heartbeat_at).where(
            TuningHeartbeatRow.trial_id.in_(trial_ids))
        with self._translated(), self._engine.connect() as connection:
            return {trial_id: as_utc(beat) for trial_id, beat in connection.execute(query)}

    @contextmanager
    def _locked(self) -> Iterator[Connection]:
        """A write transaction holding the journal's lock."""
        with self._translated(), self._writer.begin() as connection:
            if self._postgres:
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                   {"key": _PG_JOURNAL_LOCK})
            yield connection

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except (OperationalError, InterfaceError) as exc:
            raise StoreUnavailable(f"{self!r} unavailable: {exc.orig or exc}") from exc


class SqlJournalStorage(JournalStorage, BaseHeartbeat):
    """Optuna's `JournalStorage` over `SqlJournalBackend`, with heartbeats: while a trial runs,
    Optuna's heartbeat thread calls `record_heartbeat` every `heartbeat_interval_s`; at the
    start of each trial Optuna fails the trials whose latest heartbeat is older than
    `grace_period_s` (default: two intervals) and passes each to `failed_trial_callback`.
    Both durations are positive whole seconds (`ValueError` otherwise, as Optuna's RDBStorage).
    A pickled storage carries the callback: it must pickle too."""

    def __init__(self, backend: SqlJournalBackend, *, heartbeat_interval_s: int = 10,
                 grace_period_s: int | None = None,
                 failed_trial_callback: FailedTrialCallback | None = None) -> None:
        _check_positive("heartbeat_interval_s", heartbeat_interval_s)
        if grace_period_s is not None:
            _check_positive("grace_period_s", grace_period_s)
        super().__init__(backend)
        self.backend = backend
        self._interval = heartbeat_interval_s
        self._grace = grace_period_s if grace_period_s is not None else 2 * heartbeat_interval_s
        self._failed_trial_callback = failed_trial_callback

    def record_heartbeat(self, trial_id: int) -> None:
        self.backend.record_heartbeat(trial_id)

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        """RUNNING trials whose latest heartbeat is older than the grace period; a trial that
        never beat is not one of them."""
        running = self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,))
        beats = self.backend.last_heartbeats([trial._trial_id for trial in running])
        cutoff = utcnow() - timedelta(seconds=self._grace)
        return sorted(trial_id for trial_id, beat in beats.items() if beat < cutoff)

    def get_heartbeat_interval(self) -> int | None:
        return self._interval

    def get_heartbeat_stale_trial_callback(self) -> FailedTrialCallback | None:
        return self._failed_trial_callback


def _check_positive(name: str, seconds: int) -> None:
    if seconds <= 0:
        raise ValueError(f"{name} must be a positive whole number of seconds, got {seconds!r}")
