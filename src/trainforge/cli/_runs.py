"""`trainforge runs ...` over tracking: list (filter, sort), compare, history, gc, replay.

Thin: each command calls one `trainforge.tracking` function and renders the records. A bad
`--filter` or `--sort` exits 2 naming the position and what was expected; an unknown run or
experiment exits 1, and so do an ambiguous run id prefix (RUN_ID is a whole id or a unique
start of one) and a database that does not exist (only `gc` creates one).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Annotated, Any, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.cli._views import HEADLINE_METRICS, run_row
from trainforge.entities import Run
from trainforge.errors import NotFound, QueryError
from trainforge.storage import all_items
from trainforge.storage.query import comparisons
from trainforge.tracking import (
    DEFAULT_CRASH_TIMEOUT_S,
    collect_crashed_runs,
    comparison,
    get_metric_history,
    parse_filter,
    parse_sort,
    replay_spills,
    search_runs,
)


def runs_list(
    experiment: Annotated[Optional[str], typer.Option(help="Only this experiment.")] = None,
    filter: Annotated[Optional[str], typer.Option(
        "--filter", help="e.g. \"metrics.test_auc > 0.9 and params.training.optimizer.lr < 1e-3\", "
        "\"tags.gates.passed = false or (status = 'failed' and experiment = 'fraud')\""
    )] = None,
    sort: Annotated[Optional[str], typer.Option(
        "--sort", help="e.g. -metrics.test_auc (\"-\": descending); default: newest first"
    )] = None,
    limit: Annotated[int, typer.Option(min=1)] = 50,
    as_json: _render.JsonFlag = False,
) -> None:
    """Runs matching --filter, ordered by --sort (newest first by default).

    The table has a column for each metric --filter and --sort use, then up to three headline
    test metrics, each named in full; --json gives every metric.
    """
    keys = _metric_keys(filter, sort)
    store = _context.existing_store()
    try:
        runs = search_runs(experiment, filter, sort, limit, store=store)
    except NotFound as exc:
        _render.fail(str(exc), 1)
    names = {e.experiment_id: e.name
             for e in all_items(lambda cursor: store.list_experiments(cursor=cursor))}
    rows = [run_row(r, names) for r in runs]
    if as_json:
        _render.emit_json(rows)
        return
    metrics = _metric_columns(runs, keys)
    columns = ["run_id", "experiment", "status", "started", "seconds", *metrics]
    table = [[_status(row) if c == "status" else row[c] for c in columns[:5]]
             + [run.metrics.get(m) for m in metrics] for row, run in zip(rows, runs, strict=True)]
    _render.emit_table("Runs", columns, table,
                       empty="no runs match" if filter or experiment else "no runs")


def _status(row: dict[str, Any]) -> str:
    """A row's status as the table shows it: a running run whose process is gone says so."""
    return f"{row['status']}, process gone" if row["process"] == "gone" else row["status"]


def _metric_keys(filter: str | None, sort: str | None) -> list[str]:
    """The metric names --filter and --sort use (shown first), after checking both parse."""
    try:
        condition = parse_filter(filter)
    except QueryError as exc:
        _render.fail(f"--filter {exc}", 2)
    try:
        sort_keys = parse_sort(sort)
    except QueryError as exc:
        _render.fail(f"--sort {exc}", 2)
    fields = [k.field for k in sort_keys] + [c.field for c in comparisons(condition)]
    return list(dict.fromkeys(f.name for f in fields if f.kind == "metrics"))


def _metric_columns(runs: Sequence[Run], keys: list[str]) -> list[str]:
    """One column per metric, named in full: those --filter and --sort use, then up to three
    headline test metrics that some listed run has."""
    present = set().union(*(run.metrics for run in runs))
    headline = [f"test_{name}" for name in HEADLINE_METRICS if f"test_{name}" in present]
    return list(dict.fromkeys([*keys, *headline[:3]]))


def runs_compare(
    run_ids: Annotated[list[str], typer.Argument(
        metavar="RUN_ID...", help="Two or more run ids, or their first characters.")],
    as_json: _render.JsonFlag = False,
) -> None:
    """Runs side by side: the params that differ, and every metric."""
    if len(run_ids) < 2:
        _render.fail("compare needs at least two run ids", 2)
    store = _context.existing_store()
    result = comparison([_context.find_run(store, run_id) for run_id in run_ids])
    if as_json:
        _render.emit_json({"runs": list(result.run_ids), "same_params": result.same_params,
                           "params": {k: list(v) for k, v in result.params.items()},
                           "metrics": {k: list(v) for k, v in result.metrics.items()}})
        return
    rows = [[f"params.{key}", *values] for key, values in result.params.items()]
    rows += [[f"metrics.{key}", *values] for key, values in result.metrics.items()]
    title = f"{len(result.params)} params differ, {result.same_params} equal"
    _render.emit_table(title, ["field", *(r[:8] for r in result.run_ids)], rows,
                       empty=f"{title}; no run has metrics")


def runs_history(
    run_id: _context.RunId,
    key: str,
    max_points: Annotated[Optional[int], typer.Option(
        "--max-points", min=2, help="Downsample to at most this many points (min/max buckets)."
    )] = None,
    as_json: _render.JsonFlag = False,
) -> None:
    """The series KEY of run RUN_ID, by step."""
    store = _context.existing_store()
    run = _context.find_run(store, run_id)
    points = get_metric_history(run.run_id, key, max_points, store=store)
    rows = [{"step": p.step, "value": p.value, "time": _time(p.timestamp)} for p in points]
    if as_json:
        _render.emit_json(rows)
        return
    _render.emit_table(f"{key} of run {run.run_id}", ["step", "value", "time"],
                       [[r["step"], r["value"], r["time"]] for r in rows],
                       empty=f"no points of {key!r} in run {run.run_id}")


def runs_gc(
    timeout: Annotated[float, typer.Option(
        min=0.001, help="Seconds without a heartbeat after which a running run is crashed."
    )] = DEFAULT_CRASH_TIMEOUT_S,
    as_json: _render.JsonFlag = False,
) -> None:
    """Mark `crashed` the running runs whose process stopped sending heartbeats."""
    crashed = collect_crashed_runs(timeout, store=_context.store())
    if as_json:
        _render.emit_json([run.run_id for run in crashed])
        return
    for run in crashed:
        typer.echo(f"{run.run_id}  crashed (last heartbeat {_time(run.ended_at)})")
    typer.echo(f"{len(crashed)} run(s) marked crashed")


def runs_replay(as_json: _render.JsonFlag = False) -> None:
    """Write what runs spilled to local files while the database was unreachable."""
    replayed = replay_spills(_context.existing_store(), _context.settings().spill_dir)
    if as_json:
        _render.emit_json(replayed)
        return
    for run_id, count in replayed.items():
        typer.echo(f"{run_id}  {count} record(s) replayed")
    typer.echo(f"{len(replayed)} spill file(s) replayed")


def _time(moment: float | datetime | None) -> str | None:
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, timezone.utc)
    return moment.isoformat(timespec="seconds")
