"""Output for people and scripts: rich tables on a terminal, plain columns when piped, JSON on
request. rich is imported only to print to a terminal or a record in full (it costs a tenth of
a second, a fifth of what a listing should take)."""

from __future__ import annotations

import json
import logging
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TextIO

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from trainforge.orchestration import StepEvent

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def fail(message: str, code: int) -> NoReturn:
    """Print `message` on stderr and exit with `code` (1: a failure, 2: bad arguments)."""
    typer.echo(message, err=True)
    raise typer.Exit(code)


@contextmanager
def warnings_on_stderr() -> Iterator[None]:
    """Inside: each distinct warning (category and message) printed once, when raised, as one
    `warning: ...` line on stderr.

    The library may warn about one thing from several places: a checkpoint folder that a
    `kill -9` left half written is skipped when a resume looks for the newest checkpoint, and
    again when the trainer loads it. Python's own display shows a warning once per place that
    raised it, with its file, line and source.
    """
    shown: set[tuple[type[Warning], str]] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        if (category, str(message)) not in shown:
            shown.add((category, str(message)))
            typer.echo(f"warning: {message}", err=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def is_terminal() -> bool:
    return sys.stdout.isatty()


def console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=not is_terminal())


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, sort_keys=True) + "\n")


def emit_table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, empty: str
) -> None:
    """A table: boxed on a terminal, whitespace-aligned plain text otherwise; with no rows, the
    line `empty` instead (e.g. "no runs"), in both."""
    if not rows:
        sys.stdout.write(empty + "\n")
        return
    cells = [[_cell(v) for v in row] for row in rows]
    if is_terminal():
        from rich.table import Table

        table = Table(title=title)
        for column in columns:
            table.add_column(column)
        for row in cells:
            table.add_row(*row)
        console().print(table)
        return
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = [columns, *cells]
    for line in lines:
        padded = (value.ljust(width) for value, width in zip(line, widths, strict=True))
        sys.stdout.write("  ".join(padded).rstrip() + "\n")


def emit_fields(title: str, fields: Sequence[tuple[str, Any]]) -> None:
    """Key/value lines (a record shown in full)."""
    out = console()
    if is_terminal():
        out.print(f"[bold]{title}[/bold]")
    else:
        out.print(title)
    width = max(len(k) for k, _ in fields)
    for key, value in fields:
        out.print(f"  {key.ljust(width)}  {_cell(value)}", markup=False)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str, sort_keys=True)
    if hasattr(value, "isoformat"):
        return value.isoformat(timespec="seconds")
    return str(getattr(value, "value", value))


def setup_logging() -> None:
    """trainforge's log lines on stderr: rich on a terminal, timestamped plain lines else."""
    handler: logging.Handler
    if is_terminal():
        from rich.logging import RichHandler

        handler = RichHandler(show_path=False, show_time=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("trainforge")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)


def print_step(event: StepEvent) -> None:
    """A log line per step that ends, is retried, reused from the cache or skipped."""
    log = logging.getLogger("trainforge")
    if event.state == "finished":
        log.info("step %-9s done in %.1fs", event.step, event.seconds)
    elif event.state in ("failed", "retrying") and event.error:
        log.info("step %-9s %s (%s)", event.step, event.state, event.error)
    elif event.state in ("failed", "retrying", "cached", "skipped"):
        log.info("step %-9s %s", event.step, event.state)
