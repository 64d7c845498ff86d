"""`trainforge data validate SOURCE --contract FILE`: a contract checked over a source streamed
in Arrow batches (bounded memory, whatever the data's size), without a run.

Exit codes: 0 every rule holds (or `--on-fail warn`); 1 a rule is broken (`error`, the
default), or rows were set aside (`quarantine`: the rest hold); 1 also for a source that
matches nothing or cannot be read; 2 a bad contract or option.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from trainforge.cli import _render
from trainforge.errors import DataError, DataNotFound, SpecError


def data_validate(
    source: Annotated[str, typer.Argument(help="File, folder, glob or URL (s3://...).")],
    contract: Annotated[Path, typer.Option(help="The schema contract YAML.")],
    format: Annotated[str, typer.Option(help="auto, parquet, csv or jsonl.")] = "auto",
    on_fail: Annotated[str, typer.Option(help="error, warn or quarantine.")] = "error",
    quarantine: Annotated[Optional[Path], typer.Option(
        help="Where --on-fail quarantine writes the offending rows (Parquet).")] = None,
    as_json: _render.JsonFlag = False,
) -> None:
    """Check SOURCE against a schema contract, streaming it."""
    from trainforge.ingest import iter_batches
    from trainforge.validate import ContractChecker, QuarantineWriter, load_contract

    if on_fail not in ("error", "warn", "quarantine"):
        _render.fail(f"--on-fail {on_fail!r}: expected error, warn or quarantine", 2)
    if (on_fail == "quarantine") != (quarantine is not None):
        _render.fail("--on-fail quarantine and --quarantine PATH go together", 2)
    try:
        rules = load_contract(contract)
    except SpecError as exc:
        _render.fail(str(exc), 2)
    checker = ContractChecker(rules)
    writer = QuarantineWriter(quarantine) if quarantine is not None else None
    try:
        for part in iter_batches(source, format):  # type: ignore[arg-type]
            broken = checker.update(part.batch, part.locate)
            if writer is not None:
                writer.write(part.batch, broken, part.locate)
    except (DataError, DataNotFound) as exc:
        _render.fail(str(exc), 1)
    report = checker.finish()
    written = writer.close() if writer is not None else None
    if as_json:
        _render.emit_json({**report.to_dict(), "source": source,
                           "quarantined": writer.rows if writer else 0,
                           "quarantine": None if written is None else str(written)})
    else:
        typer.echo(f"{source}: {report.summary()}")
        if written is not None and writer is not None:
            typer.echo(f"{writer.rows} row(s) set aside in {written}")
    if not report.passed and on_fail != "warn":
        raise typer.Exit(1)
