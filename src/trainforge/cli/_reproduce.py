"""`trainforge reproduce RUN_ID`: a run replayed from its record and compared with it
(`trainforge.reproduce`). Exit 0: identical; 4: reproduced, with differences (each named with
its likely causes); 1: it cannot be reproduced (every missing part named, nothing run) or the
reproduction failed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.errors import NotReproducible

if TYPE_CHECKING:
    from trainforge.reproduce import Reproduction

EXIT_DIFFERENT = 4

Given = Annotated[Optional[list[str]], typer.Argument(
    metavar="[KEY=VALUE]...", help="Values for the overrides the run recorded redacted.")]
Strict = Annotated[bool, typer.Option(
    "--strict", help="Refuse when an installed package differs from the run's.")]
Into = Annotated[Optional[Path], typer.Option(
    "--in", metavar="DIR", help="Check the code out into this empty folder and keep it "
    "(default: a temporary folder, removed).")]


def reproduce(run_id: _context.RunId, given: Given = None, strict: Strict = False,
              into: Into = None, as_json: _render.JsonFlag = False) -> None:
    """Run RUN_ID again from its record alone (its commit and recorded changes, its pinned
    data version, its resolved spec) as a new run, and compare the two step by step."""
    from trainforge.reproduce import reproduce_run

    session = _context.session(create=False)
    original = _context.find_run(session.store, run_id)
    if not as_json:
        _render.setup_logging()
    try:
        done = reproduce_run(original.run_id, session, given=given or [], strict=strict,
                             into=into)
    except NotReproducible as exc:
        _render.fail(str(exc), 1)
    if as_json:
        _render.emit_json({**done.comparison.to_json(),
                           "checkout": None if done.checkout is None else str(done.checkout)})
    else:
        _print(done)
    if not done.comparison.identical:
        raise typer.Exit(EXIT_DIFFERENT)


def _print(done: Reproduction) -> None:
    comparison = done.comparison
    typer.echo(f"run {done.run_id} reproduces run {comparison.original}"
               + (f" (code checked out in {done.checkout})" if done.checkout else ""))
    if comparison.identical:
        typer.echo(f"identical: the same params and data version, {comparison.series} metric "
                   f"series ({comparison.points} points) equal step by step")
    else:
        typer.echo("different:")
        for difference in comparison.differences:
            typer.echo(f"  - {difference.describe()}")
        typer.echo("likely causes:")
        for cause in comparison.causes:
            typer.echo(f"  - {cause}")
    if comparison.environment:
        typer.echo("environment differences:")
        for difference in comparison.environment:
            typer.echo(f"  - {difference.describe()}")
