"""Commands over pipelines of user steps and their pipeline runs: `pipeline run TARGET`,
`pipeline list`, `pipeline show PIPELINE_RUN`, `pipeline gc`, `dag SPEC`, `resume PIPELINE_RUN`,
`explain-cache PIPELINE_RUN STEP`. TARGET is a YAML file of steps or
`package.module:attribute` (a `Pipeline`); `dag` also draws the standard training pipeline of
a spec."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.entities import PipelineRun, PipelineRunStatus
from trainforge.errors import (
    Ambiguous,
    NotFound,
    PipelineFailed,
    ResumeRefused,
    RunFailed,
    RunPreempted,
    SpecError,
)

if TYPE_CHECKING:
    from trainforge.orchestration import Dag, PipelineOutcome
    from trainforge.storage import Store

pipeline_app = typer.Typer(no_args_is_help=True, help="Pipelines of your own steps: run one, "
                           "show a pipeline run's step states, collect old step outputs.")
Target = Annotated[str, typer.Argument(
    metavar="TARGET", help="A YAML file of steps, or package.module:attribute (a Pipeline).")]
PipelineRunId = Annotated[str, typer.Argument(
    metavar="PIPELINE_RUN", help="A pipeline run id, or its first characters.")]


@pipeline_app.command("run")
def pipeline_run(
    target: Target,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Run every step; reuse nothing.")]
    = False,
    rerun: Annotated[Optional[list[str]], typer.Option(
        metavar="STEP", help="Run this step whatever its cache key (repeatable).")] = None,
    max_parallel: Annotated[Optional[int], typer.Option(
        min=1, help="Steps at once (default: the pipeline's max_parallel).")] = None,
    as_json: _render.JsonFlag = False,
) -> None:
    """Run the pipeline TARGET declares as one pipeline run, reusing cached step outputs."""
    from trainforge.orchestration import RunOptions
    from trainforge.orchestration.user_pipelines import load_pipeline, run_steps

    if not as_json:
        _render.setup_logging()
    try:
        dag, source = load_pipeline(target)
        unknown = sorted(set(rerun or ()) - {step.name for step in dag.steps})
        if unknown:
            _render.fail(f"--rerun: {unknown} are not steps of pipeline {dag.name!r} "
                         f"(steps: {[step.name for step in dag.steps]})", 2)
        options = RunOptions(not no_cache, frozenset(rerun or ()), max_parallel)
        outcome = run_steps(dag, _context.session(), options=options, source=source,
                            listener=None if as_json else _render.print_step)
    except SpecError as exc:
        _render.fail(str(exc), 2)
    except PipelineFailed as exc:
        _failed(exc)
    _report(outcome, as_json)


@pipeline_app.command("list")
def pipeline_list(
    pipeline: Annotated[Optional[str], typer.Option(
        "--pipeline", metavar="NAME", help="Only the runs of this pipeline.")] = None,
    status: Annotated[Optional[PipelineRunStatus], typer.Option(
        "--status", help="Only the runs in this status.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many.")] = 20,
    as_json: _render.JsonFlag = False,
) -> None:
    """Pipeline runs, newest first: status, tracked run, start and how long they took."""
    store = _context.existing_store()
    records = store.list_pipeline_runs(pipeline, status, limit=limit).items
    if as_json:
        _render.emit_json([{"pipeline_run_id": r.pipeline_run_id, "pipeline": r.pipeline_id,
                            "status": r.status.value, "run_id": r.run_id,
                            "started_at": r.started_at, "ended_at": r.ended_at}
                           for r in records])
        return
    rows = [[r.pipeline_run_id, r.pipeline_id, r.status.value,
             r.started_at.strftime("%Y-%m-%d %H:%M:%S"), _seconds(r.started_at, r.ended_at),
             r.run_id] for r in records]
    _render.emit_table("Pipeline runs", ["pipeline run", "pipeline", "status", "started",
                                         "seconds", "run"], rows, empty="no pipeline runs")


@pipeline_app.command("show")
def pipeline_show(pipeline_run_id: PipelineRunId, as_json: _render.JsonFlag = False) -> None:
    """A pipeline run's status and every attempt of its steps."""
    store = _context.existing_store()
    try:
        record = store.find_pipeline_run(pipeline_run_id)
    except (NotFound, Ambiguous) as exc:
        _render.fail(str(exc), 1)
    attempts = store.list_step_runs(record.pipeline_run_id)
    rows = [[a.step, a.attempt, a.state.value, _seconds(a.started_at, a.ended_at),
             (a.cache_key or "")[:12] or None, a.error] for a in attempts]
    if as_json:
        _render.emit_json({"pipeline_run_id": record.pipeline_run_id,
                           "pipeline": record.pipeline_id, "status": record.status.value,
                           "run_id": record.run_id,
                           "steps": [{"step": a.step, "attempt": a.attempt,
                                      "state": a.state.value, "error": a.error,
                                      "cache_key": a.cache_key, "cached_from": a.cached_from,
                                      "started_at": a.started_at, "ended_at": a.ended_at}
                                     for a in attempts]})
        return
    typer.echo(f"pipeline run {record.pipeline_run_id} of {record.pipeline_id}: "
               f"{record.status.value}")
    _render.emit_table("Steps", ["step", "attempt", "state", "seconds", "key", "error"], rows,
                       empty="no steps")


@pipeline_app.command("gc")
def pipeline_gc(
    older_than: Annotated[float, typer.Option(
        "--older-than", min=0, metavar="DAYS",
        help="Delete the stored values that only pipeline runs last active more than DAYS "
             "days ago name.")] = 30.0,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Say what would be deleted; delete nothing.")] = False,
    as_json: _render.JsonFlag = False,
) -> None:
    """Delete the step outputs (values/) that only old pipeline runs name; those of running
    and recent pipeline runs are kept, for the cache and resume."""
    from datetime import timedelta

    from trainforge.orchestration import value_store
    from trainforge.orchestration.gc import collect_values

    session = _context.session(create=False)
    collected = collect_values(session.store, value_store(session),
                               timedelta(days=older_than), dry_run=dry_run)
    if as_json:
        _render.emit_json({"deleted": collected.deleted, "freed_bytes": collected.freed_bytes,
                           "kept": collected.kept, "unnamed": collected.unnamed,
                           "dry_run": dry_run})
        return
    verb = "would delete" if dry_run else "deleted"
    typer.echo(f"{verb} {len(collected.deleted)} value(s), {collected.freed_bytes / 1e6:.1f} MB; "
               f"kept {collected.kept} that running or recent pipeline runs name"
               + (f"; left {collected.unnamed} no step run names" if collected.unnamed else ""))


def resume(
    pipeline_run_id: Annotated[str, typer.Argument(
        metavar="RUN_ID|PIPELINE_RUN", help="A tracked run's id or a pipeline run's id (or "
        "the first characters of either).")],
    as_json: _render.JsonFlag = False,
) -> None:
    """Continue a failed pipeline run: the steps that did not succeed, and those after them,
    run again with the code as it is now; the others' stored outputs are reused. A run of
    the training pipeline (named by its run or its pipeline run) continues its run with the
    spec, overrides and launch flags it was started with, training from the newest
    checkpoint."""
    from trainforge.orchestration.user_pipelines import resume_steps

    if not as_json:
        _render.setup_logging()
    record = _pipeline_run_of(_context.existing_store(), pipeline_run_id)
    if "spec" in record.source:
        _resume_training(record, as_json)
        return
    try:
        outcome = resume_steps(record.pipeline_run_id, _context.session(create=False),
                               listener=None if as_json else _render.print_step)
    except (SpecError, ResumeRefused) as exc:
        _render.fail(str(exc), 2)
    except PipelineFailed as exc:
        _failed(exc)
    _report(outcome, as_json)


def _pipeline_run_of(store: Store, given: str) -> PipelineRun:
    """The pipeline run `given` names, as a pipeline run's id or a tracked run's (its pipeline
    run); exit 1 saying which it is neither of."""
    from trainforge.tracking import system_of

    try:
        return store.find_pipeline_run(given)
    except Ambiguous as exc:
        _render.fail(str(exc), 1)
    except NotFound as exc:
        no_pipeline_run = exc
    try:
        run = store.find_run(given)
    except (NotFound, Ambiguous) as exc:
        _render.fail(f"{no_pipeline_run}; {exc}", 1)
    pipeline_run = system_of(run).pipeline_run
    if pipeline_run is None:
        _render.fail(f"run {run.run_id} records no pipeline run to resume (a run of a script, "
                     "not of `trainforge run`)", 2)
    return store.get_pipeline_run(pipeline_run)


def _resume_training(record: PipelineRun, as_json: bool) -> None:
    """`resume` of a pipeline run of the training pipeline: its tracked run continued with the
    spec and overrides it was started with, in the same pipeline run."""
    from trainforge.cli._app import EXIT_PREEMPTED, report_pipeline
    from trainforge.pipeline import Launch, launch_pipeline, run_pipeline
    from trainforge.tracking import system_of

    store = _context.existing_store()
    spec = record.source["spec"]
    run = store.get_run(record.run_id) if record.run_id else None
    if record.status is PipelineRunStatus.SUCCEEDED:
        _render.fail(f"pipeline run {record.pipeline_run_id} succeeded; there is nothing to "
                     "resume", 2)
    if run is None or not spec.get("path"):
        _render.fail(f"pipeline run {record.pipeline_run_id} was started from Python with a "
                     "spec object; resume it there with run_pipeline(spec, resume=RUN_ID)", 2)
    shape = system_of(run).distributed  # the launch's, recorded by the launcher
    if shape is not None and shape.nnodes > 1:
        _render.fail(f"run {run.run_id} trained on {shape.nnodes} nodes: continue it with "
                     f"`trainforge run {spec['path']} --resume {run.run_id}` and the launch "
                     "flags it was started with, on every node", 2)
    try:
        with _render.warnings_on_stderr():
            if shape is not None:  # its torchrun workers again, as many as it had
                launch = Launch(shape.nproc_per_node, max_restarts=shape.max_restarts)
                result = launch_pipeline(spec["path"], spec.get("overrides") or [], launch,
                                         resume=run.run_id,
                                         session=_context.session(create=False))
            else:
                result = run_pipeline(spec["path"], spec.get("overrides") or [],
                                      session=_context.session(create=False),
                                      resume=run.run_id, pipeline_run=record.pipeline_run_id,
                                      listener=None if as_json else _render.print_step)
    except (SpecError, ResumeRefused) as exc:
        _render.fail(str(exc), 2)
    except RunPreempted as exc:
        _render.fail(f"{exc}\ncontinue it with: trainforge resume {record.pipeline_run_id}",
                     EXIT_PREEMPTED)
    except RunFailed as exc:
        _render.fail(f"run {exc.run_id} failed:\n{exc.__cause__}", 1)
    assert result is not None  # one node: this launcher reports the run
    report_pipeline(result, as_json)


def explain_cache(pipeline_run_id: PipelineRunId,
                  step: Annotated[str, typer.Argument(help="The step's name.")],
                  as_json: _render.JsonFlag = False) -> None:
    """Why STEP of a pipeline run reused stored outputs or ran: the execution it reused, or
    what changed since the step's previous execution."""
    from trainforge.orchestration.cache import explain

    store = _context.existing_store()
    try:
        record = store.find_pipeline_run(pipeline_run_id)
    except (NotFound, Ambiguous) as exc:
        _render.fail(str(exc), 1)
    attempts = [a for a in store.list_step_runs(record.pipeline_run_id) if a.step == step]
    if not attempts:
        names = sorted({a.step for a in store.list_step_runs(record.pipeline_run_id)})
        _render.fail(f"pipeline run {record.pipeline_run_id} has no step {step!r} "
                     f"(steps: {names})", 1)
    last = attempts[-1]
    lines = explain(store, record.pipeline_id, last)
    if as_json:
        _render.emit_json({"step": step, "state": last.state.value,
                           "cache_key": last.cache_key, "reasons": lines})
        return
    typer.echo("\n".join(lines))


def dag(
    spec: Annotated[str, typer.Argument(
        help="A pipeline spec, a YAML file of steps, or package.module:attribute.")],
    dot: Annotated[Optional[Path], typer.Option(
        help="Where to write the Graphviz DOT (default: <pipeline name>.dot; - for stdout).")]
    = None,
) -> None:
    """Print the DAG a spec or pipeline declares, step by step, and write it as Graphviz DOT."""
    from trainforge.orchestration import to_dot

    try:
        graph = _load_dag(spec)
    except SpecError as exc:
        _render.fail(str(exc), 2)
    drawing = to_dot(graph)
    if dot is not None and str(dot) == "-":
        sys.stdout.write(drawing)
        return
    for step in graph.order():
        wiring = f"{', '.join(step.inputs) or '-'} -> {', '.join(step.outputs) or '-'}"
        after = (f"  (after {', '.join(step.options.after)})" if step.options.after
                 else "")
        typer.echo(f"{step.name:<16} {wiring}{after}")
    path = dot or Path(f"{graph.name}.dot")
    path.write_text(drawing)
    typer.echo(f"\nGraphviz DOT written to {path} (render: dot -Tpng {path} -o dag.png)")


def _load_dag(spec: str) -> Dag:
    """The DAG of a standard pipeline spec (a YAML with `model:`), or of user steps."""
    import yaml

    from trainforge.orchestration.user_pipelines import load_pipeline

    path = Path(spec)
    if path.is_file() and path.suffix in (".yaml", ".yml"):
        try:
            document = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise SpecError([f"{path}: is not valid YAML: {exc}"]) from exc
        if isinstance(document, dict) and ("model" in document or "data" in document):
            from trainforge.pipeline import plan_pipeline

            return plan_pipeline(spec).dag(None)
    return load_pipeline(spec)[0]


def _failed(exc: PipelineFailed) -> None:
    _render.fail(f"{exc}\nsee: trainforge pipeline show {exc.pipeline_run_id}\n"
                 f"continue it: trainforge resume {exc.pipeline_run_id}", 1)


def _report(outcome: PipelineOutcome, as_json: bool) -> None:
    record = outcome.pipeline_run
    states = {name: attempt.state.value for name, attempt in outcome.steps.items()}
    if as_json:
        _render.emit_json({"pipeline_run_id": record.pipeline_run_id,
                           "pipeline": record.pipeline_id, "status": record.status.value,
                           "run_id": record.run_id, "steps": states})
        return
    typer.echo(f"pipeline run {record.pipeline_run_id} {record.status.value}: "
               + ", ".join(f"{name} {state}" for name, state in states.items()))


def _seconds(started: datetime | None, ended: datetime | None) -> float | None:
    if started is None or ended is None:
        return None
    return (ended - started).total_seconds()
