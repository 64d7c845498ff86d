"""`trainforge models ...`: read registered versions, promote them through their gates, and see
their history, lineage and differences.

A VERSION is a number (`3`), a stage held by one version (`production`, `canary`) or an alias;
`NAME@REF` (`fraud_detector@production`) may stand for NAME and VERSION together. Exit codes:
1 what is named does not exist, or another change came first (run it again); 2 a move that is
not allowed or bad arguments; 3 the gates refused the promotion (recorded in the history).
A promotion's events (and a refusal's) go to the outbox with its history entry; it returns
without waiting for any webhook (`trainforge webhooks deliver` or `serve` sends them).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.cli._views import change_row, model_row, short_metrics, version_fields
from trainforge.entities import ModelStage, ModelVersion
from trainforge.errors import Conflict, GatesFailed, NotFound, PromotionError
from trainforge.storage import Store, all_items

if TYPE_CHECKING:
    from trainforge.registry import Promotion

EXIT_REFUSED = 3  # as a gate that stops registration
Name = Annotated[str, typer.Argument(metavar="NAME", help="A model name, or NAME@VERSION.")]
VersionArg = Annotated[Optional[str], typer.Argument(
    metavar="VERSION", help="A version number, production, canary or an alias.")]
To = Annotated[ModelStage, typer.Option("--to", help="The stage to move the version to.")]
Reason = Annotated[str, typer.Option(help="Why: recorded in the stage history.")]
Force = Annotated[bool, typer.Option(
    "--force", help="Promote although gates failed (needs --reason; recorded as forced).")]


def _version_of(store: Store, name: str, version: str | None) -> ModelVersion:
    """The version NAME and VERSION (or NAME@REF) name; exit 1 or 2 saying why not."""
    from trainforge.registry import parse_reference, resolve_version

    model, ref = parse_reference(name)
    if (ref is None) == (version is None):
        _render.fail(f"give the version once: NAME VERSION or NAME@VERSION (got {name!r}"
                     f"{'' if version is None else ' ' + repr(version)})", 2)
    try:
        return resolve_version(store, model, ref or version or "")
    except NotFound as exc:
        _render.fail(f"{exc} (see: trainforge models show {model})", 1)


def models_list(as_json: _render.JsonFlag = False) -> None:
    """Every registered model version."""
    store = _context.existing_store()
    versions = all_items(lambda cursor: store.list_model_versions(cursor=cursor))
    rows = [model_row(v) for v in versions]
    if as_json:
        _render.emit_json(rows)
        return
    columns = ["model", "version", "stage", "run_id", "created", "metrics"]
    _render.emit_table("Model versions", columns,
                       [[short_metrics(r[c]) if c == "metrics" else r[c] for c in columns]
                        for r in rows], empty="no model versions")


def models_show(name: str, as_json: _render.JsonFlag = False) -> None:
    """All versions of model NAME with their lineage."""
    store = _context.existing_store()
    versions = all_items(lambda cursor: store.list_model_versions(name, cursor=cursor))
    if not versions:
        _render.fail(f"model {name!r} not found (see: trainforge models list)", 1)
    if as_json:
        _render.emit_json([dict(version_fields(v)) for v in versions])
        return
    for version in versions:
        title = f"{version.model_name} version {version.version}"
        _render.emit_fields(title, version_fields(version))


def models_promote(
    name: Name, to: To, version: VersionArg = None, reason: Reason = "", force: Force = False,
    as_json: _render.JsonFlag = False,
) -> None:
    """Move a version to a stage if the gates its spec declares pass (see the README)."""
    from trainforge.registry import promote
    from trainforge.storage.artifacts import open_artifact_store

    store = _context.existing_store()
    settings = _context.settings()
    target = _version_of(store, name, version)
    with _stage_move(as_json):
        done = promote(store, open_artifact_store(settings.artifact_root), target.model_name,
                       target.version, to, reason=reason, force=force, user=settings.user)
    _report(done, as_json)


def models_rollback(name: Annotated[str, typer.Argument(metavar="NAME", help="A model name.")],
                    reason: Reason = "", force: Force = False,
                    as_json: _render.JsonFlag = False) -> None:
    """Put back in production the version that held it before the current one, in one move
    (its gates for production checked again; recorded as a rollback with the reason)."""
    from trainforge.registry import rollback
    from trainforge.storage.artifacts import open_artifact_store

    store = _context.existing_store()
    settings = _context.settings()
    with _stage_move(as_json):
        done = rollback(store, open_artifact_store(settings.artifact_root), name,
                        reason=reason, force=force, user=settings.user)
    _report(done, as_json)


@contextmanager
def _stage_move(as_json: bool) -> Iterator[None]:
    """A promotion's or rollback's refusals as exit codes: 3 its gates failed (their report
    with --json), 2 a move not allowed, 1 another change came first or what it names does not
    exist."""
    try:
        yield
    except GatesFailed as exc:
        if as_json:
            _render.emit_json({"promoted": False, "gates": exc.report})
        _render.fail(str(exc), EXIT_REFUSED)
    except PromotionError as exc:
        _render.fail(str(exc), 2)
    except (Conflict, NotFound) as exc:
        _render.fail(str(exc), 1)


def _report(done: Promotion, as_json: bool) -> None:
    summary = _promotion_summary(done)
    if as_json:
        _render.emit_json(summary)
        return
    change = done.change
    _render.emit_fields(f"{change.model_name} version {change.version} -> "
                        f"{change.to_stage.value}",
                        [(k, v) for k, v in summary.items() if k != "gates"])
    for gate in done.gate_report:
        typer.echo(f"  {'pass' if gate['passed'] else 'FAIL'}  {gate['gate']}: {gate['message']}")


def _promotion_summary(done: Promotion) -> dict[str, Any]:
    change = done.change
    return {
        "promoted": True, "model": change.model_name, "version": change.version,
        "from": None if change.from_stage is None else change.from_stage.value,
        "to": change.to_stage.value, "replaced": done.replaced, "forced": change.forced,
        "user": change.user, "reason": change.reason, "gates": done.gate_report,
    }


def models_history(name: str, as_json: _render.JsonFlag = False) -> None:
    """Every stage change of model NAME, oldest first: who, when, from, to, why, the gates."""
    from trainforge.registry import history

    store = _context.existing_store()
    try:
        changes = history(store, name)
    except NotFound as exc:
        _render.fail(f"{exc} (see: trainforge models list)", 1)
    rows = [change_row(change) for change in changes]
    if as_json:
        _render.emit_json(rows)
        return
    columns = ["when", "version", "from", "to", "outcome", "forced", "user", "reason", "gates"]
    _render.emit_table(f"Stage history of {name}", columns,
                       [[row[c] for c in columns] for row in rows], empty="no stage changes")


def models_diff(name: str, left: Annotated[str, typer.Argument(metavar="V1")],
                right: Annotated[str, typer.Argument(metavar="V2")],
                as_json: _render.JsonFlag = False) -> None:
    """Two versions of model NAME side by side: metrics, params that differ, lineage."""
    from trainforge.registry import diff

    store = _context.existing_store()
    compared = diff(store, _version_of(store, name, left), _version_of(store, name, right))
    if as_json:
        _render.emit_json(compared)
        return
    v1, v2 = compared["versions"]
    for section in ("metrics", "params", "lineage"):
        rows = [[key, *values] for key, values in compared[section].items()]
        empty = f"no {section} differ" if section == "params" else f"no {section}"
        _render.emit_table(section, [section[:-1] if section != "lineage" else "field",
                                     f"version {v1}", f"version {v2}"], rows, empty=empty)
    typer.echo(f"({compared['params_equal']} params equal)")


def models_lineage(name: Name, version: VersionArg = None,
                   as_json: _render.JsonFlag = False) -> None:
    """Where a version came from: run, data version, feature pipeline hash, git commit,
    environment, parent runs."""
    from trainforge.registry import lineage

    store = _context.existing_store()
    found = lineage(store, _version_of(store, name, version))
    if as_json:
        _render.emit_json(found)
        return
    _render.emit_fields(f"Lineage of {found['model']} version {found['version']}",
                        list(found.items()))


def models_alias(name: str, alias: str, version: Annotated[str, typer.Argument(
        metavar="VERSION")]) -> None:
    """Point ALIAS of model NAME at VERSION (`trainforge models alias fraud_detector champion
    3`); NAME@ALIAS then names it."""
    from trainforge.registry import set_alias

    store = _context.existing_store()
    try:
        target = set_alias(store, name, alias, version)
    except ValueError as exc:
        _render.fail(str(exc), 2)
    except NotFound as exc:
        _render.fail(str(exc), 1)
    typer.echo(f"{name}@{alias} -> version {target.version}")
