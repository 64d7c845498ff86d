"""`trainforge checkpoints ...` over `trainforge.pipeline`: list (reconciled with storage) and gc.

Thin: each command calls one library function and renders what it returns. An unknown or
ambiguous RUN_ID (a whole id or a unique start of one), a run without checkpoints, a running
run (gc without --force) or a retention that cannot be applied exit 1 with the reason on
stderr; a bad option value exits 2.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.entities import CheckpointRecord, Run
from trainforge.errors import CheckpointError, Conflict, NotFound, SpecError

KeepLast = Annotated[Optional[int], typer.Option(
    min=0, help="Newest checkpoints kept (default: the run's training.checkpoint.keep_last).")]
KeepBest = Annotated[Optional[int], typer.Option(
    min=0, help="Best checkpoints by the run's monitor metric kept besides (default: the "
    "run's training.checkpoint.keep_best).")]
Force = Annotated[bool, typer.Option(
    "--force", help="Prune a run still marked running (only if its process is gone).")]
SpecFile = Annotated[Optional[Path], typer.Option(
    "--spec", help="The pipeline spec whose training.checkpoint.storage_options open the run's "
    "checkpoint location (credentials are never recorded with the run).")]
FAILURES = (CheckpointError, Conflict, NotFound)


@contextmanager
def _checkpoint_warnings() -> Iterator[None]:
    """Each `CheckpointWarning` (a folder that is not a valid checkpoint) as one line, even
    for a folder an earlier call in this process warned about."""
    from trainforge.train.checkpoint import CheckpointWarning

    with _render.warnings_on_stderr():
        warnings.simplefilter("always", CheckpointWarning)
        yield


def checkpoints_list(
    run_id: _context.RunId,
    all_: Annotated[bool, typer.Option("--all", help="Also those whose files are gone.")] = False,
    spec: SpecFile = None,
    as_json: _render.JsonFlag = False,
) -> None:
    """The checkpoints of run RUN_ID by step, after reconciling the records with storage."""
    from trainforge.pipeline import checkpoint_policy, list_run_checkpoints

    store = _context.existing_store()
    run = _context.find_run(store, run_id)
    try:
        options = _storage_options(spec, run)
        with _checkpoint_warnings():
            records = list_run_checkpoints(store, run.run_id, include_deleted=all_,
                                           storage_options=options)
        monitor = checkpoint_policy(run).monitor
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    rows = [checkpoint_row(record) for record in records]
    if as_json:
        _render.emit_json(rows)
        return
    columns = ["step", "epoch", "created", "deleted", *([monitor] if monitor else []), "uri"]
    _render.emit_table(f"Checkpoints of run {run.run_id}", columns,
                       [_cells(row, monitor) for row in rows],
                       empty=f"no checkpoints of run {run.run_id}"
                       + ("" if all_ else " (--all shows deleted ones too)"))


def checkpoints_gc(
    run_id: _context.RunId,
    keep_last: KeepLast = None,
    keep_best: KeepBest = None,
    force: Force = False,
    spec: SpecFile = None,
    as_json: _render.JsonFlag = False,
) -> None:
    """Delete the checkpoints of run RUN_ID that retention drops.

    Kept: the --keep-last newest and, besides, the --keep-best best by the run's monitor metric.
    """
    from trainforge.pipeline import gc_run_checkpoints

    store = _context.store()
    run = _context.find_run(store, run_id)
    try:
        options = _storage_options(spec, run)
        with _checkpoint_warnings():
            deleted = gc_run_checkpoints(store, run.run_id, keep_last, keep_best, force=force,
                                         storage_options=options)
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    if as_json:
        _render.emit_json([{"step": info.step, "uri": info.uri} for info in deleted])
        return
    for info in deleted:
        typer.echo(f"{info.step}  deleted  {info.uri}")
    typer.echo(f"{len(deleted)} checkpoint(s) deleted")


def _storage_options(spec: Path | None, run: Run) -> dict[str, Any] | None:
    """The storage options SPEC gives for the run's checkpoint location; without --spec,
    those the credentials file (`TRAINFORGE_CREDENTIALS`) gives for it (None: none, the
    environment's credentials). A spec or credentials file that does not load exits 2
    naming the problem."""
    from trainforge.config import load_spec
    from trainforge.pipeline import spec_storage_options
    from trainforge.tracking import system_of

    try:
        if spec is None:
            recorded = system_of(run).checkpoint
            credentials = _context.session(create=False).credentials
            return credentials.options_for(recorded.location) if recorded else None
        loaded = load_spec(spec)
    except SpecError as exc:
        _render.fail(str(exc), 2)
    return spec_storage_options(loaded, run)


def checkpoint_row(record: CheckpointRecord) -> dict[str, Any]:
    """A checkpoint record as JSON-safe values (non-finite metrics as None)."""
    deleted = record.deleted_at
    return {
        "step": record.step,
        "epoch": record.epoch,
        "created": record.created_at.isoformat(timespec="seconds"),
        "deleted": deleted.isoformat(timespec="seconds") if deleted is not None else None,
        "uri": record.uri,
        "metrics": {k: v if math.isfinite(v) else None for k, v in record.metrics.items()},
    }


def _cells(row: dict[str, Any], monitor: str | None) -> list[Any]:
    """A table line: the monitor metric's value (if the run has one) before the uri."""
    metric = [row["metrics"].get(monitor)] if monitor else []
    return [row["step"], row["epoch"], row["created"], row["deleted"], *metric, row["uri"]]
