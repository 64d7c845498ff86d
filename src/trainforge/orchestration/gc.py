"""Collecting the value store: delete the values only old pipeline runs name.

A value is kept while a step run of a pipeline run that is still running, or that was active
(ended, or started while it runs) within `older_than`, names it; the cache and a resume reuse
those. A value only older pipeline runs name is deleted: a later cache lookup then says
`gone` and runs the step, a resume of such a run runs its steps again. A value no step run
names at all is left alone: a step may be storing it at this moment, its step run not yet
updated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from trainforge.entities import PipelineRunStatus
from trainforge.orchestration.values import PREFIX, ValueRef, ValueStore
from trainforge.storage.contracts import PipelineRunStore


@dataclass(frozen=True)
class ValueCollection:
    """What `collect_values` deleted (or, dry, would delete), what it kept, and how many
    values no step run names (left alone)."""

    deleted: list[str] = field(default_factory=list)  # object keys
    freed_bytes: int = 0
    kept: int = 0
    unnamed: int = 0


def collect_values(store: PipelineRunStore, values: ValueStore, older_than: timedelta, *,
                   dry_run: bool = False, now: datetime | None = None) -> ValueCollection:
    """Delete the values that only pipeline runs last active before `now - older_than` name
    (none with `dry_run`)."""
    cutoff = (now or datetime.now(timezone.utc)) - older_than
    live: set[str] = set()
    expired: set[str] = set()
    for attempt in store.list_step_outputs():
        digests = {ref["digest"] for ref in attempt.outputs.values()
                   if isinstance(ref, dict) and "digest" in ref}
        if attempt.status is PipelineRunStatus.RUNNING or attempt.active_at >= cutoff:
            live |= digests
        else:
            expired |= digests
    deleted, freed, kept, unnamed = [], 0, 0, 0
    for key, size in values.objects.list(PREFIX).items():
        digest = ValueRef.digest_of(key)
        if digest in live:
            kept += 1
        elif digest in expired:
            if not dry_run:
                values.objects.delete(key)
            deleted.append(key)
            freed += size
        else:
            unnamed += 1
    return ValueCollection(deleted, freed, kept, unnamed)
