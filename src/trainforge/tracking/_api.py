"""Reading runs back, comparing them, and housekeeping (crashed runs, spill replay).

Each function takes an optional `store`; without one it uses `default_store()`, the database
of `Settings.from_env()`. Unlike the store's list methods, which return one `Page` at a time,
these return plain lists: the whole metric series, and the first `limit` matching runs (or all
of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from trainforge.config import Settings, flatten_paths
from trainforge.entities import MetricPoint, Run
from trainforge.errors import NotFound
from trainforge.storage import MetricStore, RunRecordStore, RunStore, Store, all_items
from trainforge.tracking._defaults import default_store
from trainforge.tracking._spill import replay_directory

DEFAULT_CRASH_TIMEOUT_S = 300.0


def search_runs(
    experiment: str | Sequence[str] | None = None,
    filter: str | None = None,
    sort: str | None = None,
    limit: int | None = 100,
    store: Store | None = None,
) -> list[Run]:
    """The first `limit` runs (every one for None) of the named experiment(s) (all when None)
    matching `filter`, ordered by `sort`.

    `filter`: "metrics.test_auc > 0.9 and params.training.optimizer.lr < 1e-3 and status =
    'completed'", "tags.gates.passed = false or (status = 'failed' and experiment = 'fraud')"
    (`trainforge.storage.query` has the grammar); `sort`: "-metrics.test_auc,started_at"
    ("-" descending; missing values last; ties newest first). `QueryError` names the position
    of a mistake; `NotFound` an unknown experiment. To read the runs page by page, call the
    store's `search_runs` with a cursor.
    """
    store = store or default_store()
    experiment_ids = None
    if experiment is not None:
        names = [experiment] if isinstance(experiment, str) else list(experiment)
        known = {e.name: e.experiment_id for e in all_items(
            lambda cursor: store.list_experiments(cursor=cursor))}
        missing = [name for name in names if name not in known]
        if missing:
            raise NotFound(f"experiment {missing[0]!r} not found (have: "
                           f"{', '.join(sorted(known)) or 'none'})")
        experiment_ids = [known[name] for name in names]
    if limit is not None:
        return list(store.search_runs(experiment_ids, filter, sort, limit).items)
    return all_items(lambda cursor: store.search_runs(experiment_ids, filter, sort,
                                                      cursor=cursor))


def get_run(run_id: str, store: RunStore | None = None) -> Run:
    """The stored run; `NotFound` when there is none."""
    return (store or default_store()).get_run(run_id)


def get_metric_history(
    run_id: str, key: str, max_points: int | None = None, store: MetricStore | None = None
) -> list[MetricPoint]:
    """The whole series `key` of the run by step; with `max_points`, downsampled in the
    database to at most that many points, keeping each bucket's minimum and maximum."""
    metrics = store or default_store()
    if max_points is not None:
        return list(metrics.get_metric_history(run_id, key, max_points).items)
    return all_items(lambda cursor: metrics.get_metric_history(run_id, key, cursor=cursor))


def collect_crashed_runs(
    timeout_s: float = DEFAULT_CRASH_TIMEOUT_S, store: RunStore | None = None
) -> list[Run]:
    """Mark `crashed` every running run whose heartbeat is older than `timeout_s`; return them."""
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    cutoff = datetime.now(timezone.utc) - timedelta(seconds=timeout_s)
    return (store or default_store()).mark_crashed(cutoff)


def replay_spills(
    store: RunRecordStore | None = None, directory: str | Path | None = None
) -> dict[str, int]:
    """Write what runs spilled while the database was unreachable: run id → records replayed."""
    return replay_directory(store or default_store(),
                            Path(directory or Settings.from_env().spill_dir))


@dataclass(frozen=True)
class RunComparison:
    """Runs side by side: `params` only where they differ (flattened "a.b.c" keys), every
    metric key of any run; a value a run lacks is None."""

    run_ids: tuple[str, ...]
    params: dict[str, tuple[Any, ...]]
    metrics: dict[str, tuple[float | None, ...]]
    same_params: int


def compare_runs(run_ids: Sequence[str], store: RunStore | None = None) -> RunComparison:
    """Fetch and compare runs; at least two ids, `NotFound` naming the first unknown one."""
    if len(run_ids) < 2:
        raise ValueError(f"compare needs at least two runs, got {len(run_ids)}")
    store = store or default_store()
    return comparison([store.get_run(run_id) for run_id in run_ids])


def comparison(runs: Sequence[Run]) -> RunComparison:
    """The comparison of `runs` (pure)."""
    flat = [flatten_paths(run.params) for run in runs]
    param_keys = sorted(set().union(*flat))
    params = {key: tuple(f.get(key) for f in flat) for key in param_keys}
    differing = {key: values for key, values in params.items() if len(set(map(repr, values))) > 1}
    metric_keys = sorted(set().union(*(run.metrics for run in runs)))
    metrics = {key: tuple(run.metrics.get(key) for run in runs) for key in metric_keys}
    return RunComparison(tuple(run.run_id for run in runs), differing, metrics,
                         len(params) - len(differing))

