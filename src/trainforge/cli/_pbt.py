"""Population-based training in the CLI over `trainforge.tuning`: `pbt_run` is what `trainforge
tune SPEC` does for a spec with `tuning.pbt`, and `trainforge pbt show` prints a study's
lineage. Thin: each calls one library function and renders its result.

A PBT study exits 2 for a bad spec (nothing is created) and 1 when it fails; `pbt show` exits 1
for an unknown RUN_ID or a run that is no PBT study.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.errors import ArtifactError, RunFailed, SpecError

if TYPE_CHECKING:
    from trainforge.tuning import Lineage, PbtResult

Overrides = Annotated[Optional[list[str]], typer.Argument(help="Field overrides: a.b=value")]


def pbt_run(spec: str, overrides: Overrides = None, as_json: bool = False) -> None:
    """Train the population SPEC's tuning.pbt declares; print each member and the lineage."""
    from trainforge.tuning import run_pbt

    try:
        with _render.warnings_on_stderr():
            result = run_pbt(spec, overrides or [], session=_context.session())
    except SpecError as exc:
        _render.fail(str(exc), 2)
    except RunFailed as exc:
        _render.fail(f"run {exc.run_id} failed:\n{exc.__cause__}", 1)
    if as_json:
        _render.emit_json(result_view(result))
        return
    _render.emit_table("PBT members (best first)", ["member", "run", "score", "hyperparameters"],
                       [[m.index, m.run_id, m.score, m.values] for m in result.members],
                       empty="no members")
    _emit_lineage(result.lineage)
    typer.echo(f"\nstudy run {result.study.run_id}; lineage: trainforge pbt show "
               f"{result.study.run_id}")


def pbt_show(run_id: _context.RunId, as_json: _render.JsonFlag = False) -> None:
    """The lineage of PBT study RUN_ID: every exploit (or why it was refused)."""
    from trainforge.storage.artifacts import open_artifact_store
    from trainforge.tuning import read_lineage

    store = _context.existing_store()
    run = _context.find_run(store, run_id)
    try:
        lineage = read_lineage(run.run_id,
                               open_artifact_store(_context.settings().artifact_root))
    except ArtifactError as exc:
        _render.fail(f"run {run.run_id} is no PBT study: {exc}", 1)
    if as_json:
        _render.emit_json(lineage_view(lineage))
    else:
        _emit_lineage(lineage)


def _emit_lineage(lineage: Lineage) -> None:
    rows = [[r.interval, r.step, r.recipient, r.donor, "yes" if r.exploited else "no",
             r.donor_checkpoint_step, {k: list(v) for k, v in r.changes().items()},
             r.reason or ""] for r in lineage.exploits]
    _render.emit_table(f"PBT lineage ({lineage.metric}, {lineage.direction})",
                       ["interval", "step", "recipient", "donor", "exploited", "donor ckpt",
                        "changes", "reason"], rows, empty="no exploits")


def result_view(result: PbtResult) -> dict[str, Any]:
    return {"study_run": result.study.run_id,
            "members": [{"member": m.index, "run": m.run_id, "score": m.score,
                         "values": m.values} for m in result.members],
            **lineage_view(result.lineage)}


def lineage_view(lineage: Lineage) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(lineage.to_json())
    return data
