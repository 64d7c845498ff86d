"""`trainforge data snapshot | list | show | diff | checkout | tag` over `trainforge.versioning`.

Thin: each command calls the data repository and renders what it returns. A reference (REF) is
a data version id, a unique start of one (6 characters or more), NAME (its latest snapshot),
NAME@NUMBER or NAME@TAG. A source or reference that names nothing, a damaged object, or a
checkout into a folder holding files exit 1 with the reason on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.errors import DataError, DataNotFound, NotFound

if TYPE_CHECKING:
    from trainforge.entities import DataVersion
    from trainforge.profiles import DatasetProfile
    from trainforge.versioning import DataRepository

Ref = Annotated[str, typer.Argument(metavar="REF", help="Data version id (or its first 6+ "
                                    "characters), NAME, NAME@NUMBER or NAME@TAG.")]
FAILURES = (DataError, DataNotFound, NotFound)


def _repository(create: bool = False) -> DataRepository:
    from trainforge.versioning import open_repository

    store = _context.store() if create else _context.existing_store()
    try:
        return open_repository(_context.settings(), store)
    except DataError as exc:
        _render.fail(str(exc), 1)


def data_snapshot(
    source: Annotated[str, typer.Argument(help="File, folder, glob or URL (s3://...).")],
    name: Annotated[Optional[str], typer.Option(help="Name the snapshot: numbered under the "
                                                "name (NAME@1, NAME@2, ... kept for good) "
                                                "and NAME@latest moved to it.")] = None,
    format: Annotated[str, typer.Option(help="auto, parquet, csv or jsonl.")] = "auto",
    as_json: _render.JsonFlag = False,
) -> None:
    """Store SOURCE's files once each, content-addressed, with a manifest: a data version."""
    repository = _repository(create=True)
    try:
        snap = repository.snapshot(source, name=name, format=format)  # type: ignore[arg-type]
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    numbered = f"{name}@{snap.number.tag}" if snap.number is not None else None
    row = {**version_row(snap.version), "uploaded": snap.uploaded, "reused": snap.reused,
           "name": name, "number": numbered}
    if as_json:
        _render.emit_json(row)
        return
    typer.echo(f"data version {snap.version.data_version_id}: {len(snap.manifest.files)} "
               f"file(s), {snap.version.num_rows} rows; {snap.uploaded} uploaded, "
               f"{snap.reused} already stored"
               + (f"; {numbered} and {name}@latest" if name else ""))


def data_list(as_json: _render.JsonFlag = False) -> None:
    """Data versions, newest first, with their tags."""
    from trainforge.storage import all_items

    store = _context.existing_store()
    versions = all_items(lambda cursor: store.list_data_versions(cursor=cursor))
    tags: dict[str, list[str]] = {}
    for tag in store.list_data_tags():
        tags.setdefault(tag.data_version_id, []).append(f"{tag.name}@{tag.tag}")
    rows = [{**version_row(v), "tags": tags.get(v.data_version_id, [])} for v in versions]
    if as_json:
        _render.emit_json(rows)
        return
    _render.emit_table("Data versions", ["id", "created", "files", "rows", "tags", "source"],
                       [[r["id"][:12], r["created"], r["files"], r["rows"], ", ".join(r["tags"]),
                         r["source"]] for r in rows], empty="no data versions")


def data_show(ref: Ref, as_json: _render.JsonFlag = False) -> None:
    """One data version: its files (name, rows, size, hash) when it was snapshotted."""
    repository = _repository()
    try:
        version_id = repository.resolve(ref)
        version = repository.versions.get_data_version(version_id)
        tags = [f"{t.name}@{t.tag}" for t in repository.versions.list_data_tags(version_id)]
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    row = {**version_row(version), "tags": tags, "file_list": list(version.files)}
    if as_json:
        _render.emit_json(row)
        return
    _render.emit_fields(f"Data version {version_id}", [
        ("created", row["created"]), ("source", row["source"]), ("rows", row["rows"]),
        ("tags", ", ".join(tags))])
    _render.emit_table("Files", ["name", "rows", "size", "sha256"],
                       [[f.get("name"), f.get("rows"), f.get("size"), str(f.get("sha256"))[:12]]
                        for f in version.files], empty="no files recorded")


def data_diff(old: Ref, new: Ref, as_json: _render.JsonFlag = False) -> None:
    """Files added, removed and changed from OLD to NEW, their rows, and the columns whose
    schema changed or whose values drifted (their profiles: stored, else made now)."""
    repository = _repository()
    try:
        diff = repository.diff(old, new)
        columns = _column_changes(repository, diff.old.version_id, diff.new.version_id)
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    result = {
        "old": diff.old.version_id, "new": diff.new.version_id,
        "rows": {"old": diff.old.num_rows, "new": diff.new.num_rows},
        "added": [_entry(f) for f in diff.added], "removed": [_entry(f) for f in diff.removed],
        "changed": [{"name": a.name, "rows": {"old": a.rows, "new": b.rows}}
                    for a, b in diff.changed],
        "unchanged": diff.unchanged, "columns": columns,
    }
    if as_json:
        _render.emit_json(result)
        return
    for f in diff.added:
        typer.echo(f"+ {f.name} ({f.rows} rows)")
    for f in diff.removed:
        typer.echo(f"- {f.name} ({f.rows} rows)")
    for a, b in diff.changed:
        typer.echo(f"~ {a.name} ({a.rows} -> {b.rows} rows)")
    typer.echo(f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} "
               f"changed, {diff.unchanged} unchanged; rows {diff.old.num_rows} -> "
               f"{diff.new.num_rows}")
    typer.echo("columns: " + ("; ".join(
        [f"{name!r} added" for name in columns["added"]]
        + [f"{name!r} removed" for name in columns["removed"]]
        + [f"{c['column']!r} was {c['was']}, now {c['now']}" for c in columns["retyped"]]
        + [f"{c['column']!r} drifted ({c['over']})" for c in columns["drifted"]])
        or "the same schema, no column drifted"))


def _column_changes(repository: DataRepository, old_id: str, new_id: str) -> dict[str, Any]:
    """Columns added, removed or retyped from the old version's profile to the new one's, and
    those that drifted by the default thresholds (`profiles.compute_drift`)."""
    from trainforge.profiles import compute_drift

    report = compute_drift(_profile_of_version(repository, old_id),
                           _profile_of_version(repository, new_id))
    drifted = [{"column": c.column, "over": ", ".join(
        f"{name} {c.statistics[name]:.3g} > {limit:g}" for name, limit in c.thresholds.items()
        if c.statistics.get(name, 0.0) > limit)} for c in report.columns if c.drifted]
    return {"added": list(report.added), "removed": list(report.removed),
            "retyped": [{"column": c, "was": a, "now": b} for c, a, b in report.retyped],
            "drifted": drifted}


def _profile_of_version(repository: DataRepository, version_id: str) -> DatasetProfile:
    """The version's stored profile, else its files' (checked out once, each file profiled
    once and the profile stored beside the version)."""
    from trainforge.profiles import load_profile, profile_source

    stored = load_profile(repository.versions, version_id)
    if stored is not None:
        return stored
    _, folder = repository.materialize(version_id)
    return profile_source(repository.versions, str(folder)).profile


def data_checkout(
    ref: Ref,
    dest: Annotated[Path, typer.Argument(help="An empty or missing folder.")],
) -> None:
    """Write the files of data version REF into DEST, each checked against its hash."""
    repository = _repository()
    try:
        manifest = repository.checkout(ref, dest)
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    typer.echo(f"{len(manifest.files)} file(s) of data version {manifest.version_id} "
               f"written to {dest}")


def data_tag(
    ref: Ref,
    name_at_tag: Annotated[str, typer.Argument(metavar="NAME@TAG")],
) -> None:
    """Point NAME@TAG at data version REF (moving it if it pointed elsewhere)."""
    repository = _repository()
    try:
        tag = repository.tag(ref, name_at_tag)
    except FAILURES as exc:
        _render.fail(str(exc), 1)
    typer.echo(f"{tag.name}@{tag.tag} -> {tag.data_version_id}")


def version_row(version: DataVersion) -> dict[str, Any]:
    created = version.created_at.isoformat(timespec="seconds") if version.created_at else None
    return {"id": version.data_version_id, "created": created, "source": version.source,
            "files": len(version.files), "rows": version.num_rows}


def _entry(entry: Any) -> dict[str, Any]:
    return {"name": entry.name, "rows": entry.rows}
