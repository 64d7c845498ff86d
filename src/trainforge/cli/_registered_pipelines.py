"""Registered pipelines (the seed's `pipelines` table): `pipelines register SPEC --id ID`
stores a spec, resolved, under an id that submitted runs name; `pipelines list`, `pipelines
show ID`; `pipelines resolve ID --config FILE` applies a submission's `config` (the body of
`POST /api/v1/pipelines/runs`) and prints what a job of it would run, or exits 2 naming each
key it refuses. `pipeline` (singular) is about pipeline runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from trainforge.cli import _context, _render
from trainforge.entities import Pipeline
from trainforge.errors import Conflict, NotFound, SpecError

pipelines_app = typer.Typer(no_args_is_help=True, help="Registered pipelines: register a "
                            "spec under an id, list and show them, resolve a submission.")
PipelineId = Annotated[str, typer.Argument(metavar="PIPELINE_ID",
                                           help="A registered pipeline's id.")]


@pipelines_app.command("register")
def pipelines_register(
    spec: Annotated[Path, typer.Argument(help="The pipeline spec (pipeline.yaml).")],
    pipeline_id: Annotated[str, typer.Option(
        "--id", metavar="PIPELINE_ID", help="The id submitted runs name (letters, digits, "
        "_ . -; at most 64).")],
    replace: Annotated[bool, typer.Option(
        "--replace", help="Replace the spec registered under this id with this one.")] = False,
    as_json: _render.JsonFlag = False,
) -> None:
    """Check SPEC as `trainforge run` checks it and store it, resolved, under PIPELINE_ID."""
    from trainforge.pipeline import registration

    try:
        record = registration(spec, pipeline_id, user=_context.settings().user)
    except SpecError as exc:
        _render.fail(str(exc), 2)
    try:
        registered = _context.store().register_pipeline(record, replace=replace)
    except Conflict as exc:
        _render.fail(f"{exc}\nreplace it: trainforge pipelines register {spec} --id "
                     f"{pipeline_id} --replace", 1)
    if as_json:
        _render.emit_json(_as_json(registered))
        return
    typer.echo(f"registered pipeline {registered.pipeline_id} (spec {registered.name}, "
               f"{len(registered.dag_config.get('steps', []))} steps); a submission may set: "
               f"{', '.join(_settable(registered))}")


@pipelines_app.command("list")
def pipelines_list(
    registered_only: Annotated[bool, typer.Option(
        "--registered", help="Only registered pipelines (not those only their runs "
        "recorded).")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many.")] = 50,
    as_json: _render.JsonFlag = False,
) -> None:
    """Pipelines by id: the registered ones and those their runs recorded."""
    page = _context.existing_store().list_pipelines(True if registered_only else None,
                                                    limit=limit)
    if as_json:
        _render.emit_json([_as_json(p) for p in page.items])
        return
    rows = [[p.pipeline_id, p.name, "yes" if p.registered_at else "no", p.created_by,
             p.registered_at.strftime("%Y-%m-%d %H:%M") if p.registered_at else None]
            for p in page.items]
    _render.emit_table("Pipelines", ["pipeline", "spec", "registered", "by", "at"], rows,
                       empty="no pipelines")


@pipelines_app.command("show")
def pipelines_show(pipeline_id: PipelineId, as_json: _render.JsonFlag = False) -> None:
    """A pipeline: who registered it, what a submission may set, its steps."""
    pipeline = _found(pipeline_id)
    if as_json:
        _render.emit_json({**_as_json(pipeline), "spec": pipeline.spec})
        return
    _render.emit_fields(f"Pipeline {pipeline.pipeline_id}", [
        ("spec", pipeline.name), ("registered", pipeline.registered_at),
        ("by", pipeline.created_by), ("submissions set", ", ".join(_settable(pipeline))),
        ("steps", " -> ".join(s["name"] for s in pipeline.dag_config.get("steps", [])))])


@pipelines_app.command("resolve")
def pipelines_resolve(
    pipeline_id: PipelineId,
    config: Annotated[Path, typer.Option(
        "--config", metavar="FILE", help="A JSON file of the submission's config "
        "(data_source, model_type, hyperparams, resources); - for stdin.")],
    as_json: _render.JsonFlag = False,
) -> None:
    """What a run of PIPELINE_ID submitted with this config would run: the spec paths it
    sets and the job's resources; exit 2 naming each key refused."""
    from trainforge.pipeline import resolve_submission

    body = _read_config(config)
    try:
        submission = resolve_submission(_found(pipeline_id), body)
    except SpecError as exc:
        _render.fail(str(exc), 2)
    resources = submission.resources.model_dump()
    if as_json:
        _render.emit_json({"pipeline_id": submission.pipeline_id, "sets": submission.values,
                           "overrides": submission.overrides, "resources": resources})
        return
    typer.echo(f"pipeline {submission.pipeline_id}: the spec {submission.spec.name} with "
               + (", ".join(submission.overrides) or "nothing changed"))
    typer.echo("resources: " + ", ".join(f"{k}={v}" for k, v in resources.items()))


def _found(pipeline_id: str) -> Pipeline:
    try:
        return _context.existing_store().get_pipeline(pipeline_id)
    except NotFound as exc:
        _render.fail(f"{exc}; see: trainforge pipelines list", 1)


def _read_config(path: Path) -> Any:
    import sys

    where = "stdin" if str(path) == "-" else str(path)
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
        return json.loads(text)
    except FileNotFoundError:
        _render.fail(f"--config {where}: file not found", 2)
    except json.JSONDecodeError as exc:
        _render.fail(f"--config {where}: not JSON: {exc}", 2)


def _settable(pipeline: Pipeline) -> list[str]:
    from trainforge.pipeline import submission_keys

    return submission_keys(pipeline)


def _as_json(pipeline: Pipeline) -> dict[str, Any]:
    return {"pipeline_id": pipeline.pipeline_id, "name": pipeline.name,
            "registered_at": pipeline.registered_at, "created_by": pipeline.created_by,
            "schedule": pipeline.schedule, "settable": _settable(pipeline),
            "dag_config": pipeline.dag_config}
