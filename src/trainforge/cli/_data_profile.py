"""`trainforge data profile SOURCE` and `trainforge data drift NEW --against REF`.

Profiles are stored in the database beside their data version (each file's too, so a folder
that gained a day is profiled by that day only); drift compares stored profiles, reading no
data for a stored version. NEW and REF are each a source (file, folder, glob, URL: profiled
now) or a data version (id, prefix, NAME, NAME@NUMBER, NAME@TAG) whose profile is stored; a
`NAME@...` of a known name is always a version. Versions are shown by name (`fraud@3`) and the
first 12 characters of their id. Exit codes: 0 done (no drift for `drift`); 4 drift found
(`EXIT_DRIFT`); 1 a source or version that names nothing, or a version with no stored profile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from trainforge.cli import _context, _render
from trainforge.errors import DataError, DataNotFound, NotFound

if TYPE_CHECKING:
    from trainforge.profiles import DatasetProfile
    from trainforge.versioning import DataRepository

FAILURES = (DataError, DataNotFound, NotFound)
EXIT_DRIFT = 4  # as `reproduce`'s: the comparison found a difference


def data_profile(
    source: Annotated[str, typer.Argument(help="File, folder, glob or URL (s3://...).")],
    format: Annotated[str, typer.Option(help="auto, parquet, csv or jsonl.")] = "auto",
    as_json: _render.JsonFlag = False,
) -> None:
    """Profile SOURCE (count, nulls, min/max/mean/std, quantiles, top values, distinct) and
    store the profile beside its data version."""
    from trainforge.profiles import profile_source

    repository = _repository()
    try:
        stored = profile_source(repository.versions, source, format,
                                hash_cache=repository.hash_cache)
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    summary = {"data_version": stored.version_id, "files": stored.files,
               "files_profiled": stored.profiled, **stored.profile.summary()}
    if as_json:
        _render.emit_json(summary)
        return
    typer.echo(f"data version {stored.version_id}: {stored.profile.rows} rows, {stored.files} "
               f"file(s), {stored.profiled} profiled now")
    rows = []
    for name, column in summary["columns"].items():
        q = column.get("quantiles", {})
        top = ", ".join(f"{v} ({n})" for v, n in column.get("top", [])[:3])
        rows.append([name, column["kind"], column["nulls"], column["distinct"],
                     _fmt(column.get("min")), _fmt(q.get("p50")), _fmt(column.get("max")),
                     _fmt(column.get("mean")), _fmt(column.get("std")), top])
    _render.emit_table("Columns", ["column", "kind", "nulls", "distinct", "min", "p50", "max",
                                   "mean", "std", "top"], rows, empty="no columns")


def data_drift(
    new: Annotated[str, typer.Argument(help="Source or data version to check.")],
    against: Annotated[str, typer.Option(help="Reference: a data version or a source.")],
    as_json: _render.JsonFlag = False,
) -> None:
    """Drift of NEW from the reference profile, per column, and schema drift; exit 4 when
    there is drift."""
    from trainforge.profiles import compute_drift
    from trainforge.versioning import version_label

    repository = _repository()
    try:
        reference_id, reference = _profile_of(repository, against)
        current_id, current = _profile_of(repository, new)
        report = compute_drift(reference, current)
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    if as_json:
        _render.emit_json({"reference": reference_id, "current": current_id,
                           **report.to_dict()})
    else:
        shown_new, shown_against = (version_label(repository.versions, version_id)
                                    for version_id in (current_id, reference_id))
        typer.echo(f"{new} ({shown_new}) against {against} ({shown_against}): "
                   f"{report.summary()}")
    if report.drifted:
        raise typer.Exit(EXIT_DRIFT)


def _repository() -> DataRepository:
    from trainforge.versioning import open_repository

    try:
        return open_repository(_context.settings(), _context.store())
    except DataError as exc:
        _render.fail(str(exc), 1)


def _profile_of(repository: DataRepository, reference: str) -> tuple[str, DatasetProfile]:
    """A stored version's profile when `reference` names a version, else the source's."""
    from trainforge.profiles import load_profile, profile_source
    from trainforge.versioning import version_label

    try:
        version_id = repository.resolve(reference)
    except DataError:
        if repository.names_a_version(reference):
            raise
        stored = profile_source(repository.versions, reference,
                                hash_cache=repository.hash_cache)
        return stored.version_id, stored.profile
    profile = load_profile(repository.versions, version_id)
    if profile is None:
        raise DataError(f"data version {version_label(repository.versions, version_id)} has "
                        "no stored profile: profile its files with `trainforge data profile "
                        "SOURCE` (runs profile what they read)")
    return version_id, profile


def _fmt(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else "" if value is None else str(value)
