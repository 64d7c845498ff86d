"""Whether a process may still be running a run: what a resume asks before it continues one.

A run records where it runs (`process_record`, in its `system` namespace); `is_alive` then
checks that process on this host, or, for a run on another host, that its heartbeat is younger
than `STALE_HEARTBEAT_S`.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from trainforge.entities import Run, RunStatus

# The system record's models (pydantic: 60 ms of imports) only where a record is written or
# described: `is_alive` reads the stored entry, for `runs list` beside each running run.
if TYPE_CHECKING:
    from trainforge.tracking._system import SystemRecord

STALE_HEARTBEAT_S = 60.0  # six missed heartbeats: a run on another host is taken as dead


def process_record(user: str = "") -> SystemRecord:
    """The `process` entry of a run's system namespace: where it runs, so a resume can tell
    whether it still does, and who started it (`user`, the session's)."""
    from trainforge.tracking._system import ProcessEntry, SystemRecord

    return SystemRecord(process=ProcessEntry(host=socket.gethostname(), pid=os.getpid(),
                                             user=user))


def is_alive(run: Run, now: datetime | None = None) -> bool:
    """Whether a process may still be running `run`: its process on this host exists, or,
    run elsewhere, its heartbeat is younger than `STALE_HEARTBEAT_S`."""
    if run.status is not RunStatus.RUNNING:
        return False
    process = run.system.get("process")
    if isinstance(process, dict) and process.get("host") == socket.gethostname():
        return _pid_exists(int(process["pid"]))
    beat = run.heartbeat_at or run.started_at
    now = now or datetime.now(timezone.utc)
    return (now - beat).total_seconds() < STALE_HEARTBEAT_S


def where_running(run: Run) -> str:
    """"pid N on HOST", as the run recorded it."""
    from trainforge.tracking._system import system_of

    process = system_of(run).process
    return f"pid {process.pid} on {process.host}" if process else "a process it did not record"


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
