"""The `trainforge` app: commands and their wiring; `HELP` is what `trainforge --help` opens
with. Exit codes (`EXIT_CODES` prints them in the help): 0 done; 1 the run failed, or what a
command names does not exist (a run, model or experiment, or the database itself: commands
that only read never create one, see `_context.existing_store`); 2 bad spec or arguments; 3
the run completed but a gate stopped registration; 4 a reproduction differs from its run; 75
the run was preempted (resume it)."""

from __future__ import annotations

import gc
import shlex
import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

import trainforge
from trainforge._collector import started
from trainforge.cli import (
    _checkpoints,
    _context,
    _data,
    _extras,
    _models,
    _pbt,
    _pipelines,
    _registered_pipelines,
    _render,
    _reproduce,
    _runs,
    _server,
    _serving,
    _tune,
    _webhooks,
)
from trainforge.cli._views import pipeline_summary, run_fields
from trainforge.config import redact_argument
from trainforge.errors import (
    ResumeRefused,
    RunFailed,
    RunPreempted,
    SpecError,
    TrainforgeError,
)

if TYPE_CHECKING:
    from trainforge.pipeline import PipelineResult

HELP = """Turn a declared training pipeline (a YAML spec) into tracked, resumable runs and
registered models, then read back what they recorded: runs, model versions, checkpoints. State
lives in TRAINFORGE_HOME (default: ./.trainforge), or in the database TRAINFORGE_DB names."""
EXIT_CODES = ("Exit codes: 0 done; 1 the run failed, or a run, model or database named does not "
              "exist; 2 bad spec or arguments; 3 a gate stopped registration; 4 a reproduction "
              "differs from its run; 75 preempted (resume the run).")

app = typer.Typer(no_args_is_help=True, add_completion=False, help=HELP, epilog=EXIT_CODES)
runs_app = typer.Typer(no_args_is_help=True,
                       help="Read tracked runs; mark crashed ones, replay spilled records.")
models_app = typer.Typer(no_args_is_help=True, help="Registered model versions: list, promote "
                         "through their gates, history, lineage, diff, aliases.")
webhooks_app = typer.Typer(no_args_is_help=True,
                           help="Webhooks that model and data events are POSTed to, signed, "
                           "from the outbox.")
checkpoints_app = typer.Typer(no_args_is_help=True, help="List and prune the checkpoints of runs.")
app.add_typer(runs_app, name="runs")
app.add_typer(models_app, name="models")
pbt_app = typer.Typer(no_args_is_help=True,
                      help="Population-based training: a study's lineage (`tune SPEC` runs one).")
app.add_typer(checkpoints_app, name="checkpoints")
app.add_typer(pbt_app, name="pbt")
app.add_typer(webhooks_app, name="webhooks")
app.add_typer(_tune.tune_app, name="tune")
users_app = typer.Typer(no_args_is_help=True, help="The users `trainforge server` knows.")
tokens_app = typer.Typer(no_args_is_help=True,
                         help="API tokens of `trainforge server`: create (shown once), list, "
                         "revoke.")
app.add_typer(users_app, name="users")
app.add_typer(tokens_app, name="tokens")
app.add_typer(_data.data_app, name="data")
app.command("tune-worker")(_tune.tune_worker)
app.add_typer(_pipelines.pipeline_app, name="pipeline")
app.add_typer(_registered_pipelines.pipelines_app, name="pipelines")
app.command("dag")(_pipelines.dag)
app.command("resume")(_pipelines.resume)
app.command("explain-cache")(_pipelines.explain_cache)
app.command("reproduce")(_reproduce.reproduce)

Overrides = Annotated[Optional[list[str]], typer.Argument(help="Field overrides: a.b=value")]
NprocPerNode = Annotated[Optional[int], typer.Option(
    min=1, help="Worker processes per node, started by torchrun (training.strategy ddp or fsdp).")]
Nnodes = Annotated[str, typer.Option(
    help="Nodes, N or MIN:MAX (elastic: a lost node restarts the others at the smaller world "
    "size); run this command on each of them.")]
RdzvEndpoint = Annotated[Optional[str], typer.Option(help="HOST:PORT rendezvous of all nodes.")]
RdzvId = Annotated[Optional[str], typer.Option(
    help="Job id, the same on all nodes and new for each job: it names the job's one run.")]
MaxRestarts = Annotated[int, typer.Option(min=0, help="Restarts of the workers after a failure.")]
Resume = Annotated[Optional[str], typer.Option(
    metavar="RUN_ID", help="Continue this run from its newest checkpoint, with the spec and "
    "overrides it was started with.")]
AllowNeutralChanges = Annotated[bool, typer.Option(
    "--allow-neutral-changes", help="With --resume: accept changes to the run's spec that "
    "cannot change what is trained (progress, logging cadence, resume mode); recorded on the "
    "run.")]
Reproduces = Annotated[Optional[str], typer.Option(
    metavar="RUN_ID", hidden=True, help="The run this one reproduces (`trainforge reproduce` "
    "passes it).")]
EXIT_PREEMPTED = 75  # EX_TEMPFAIL: try again later (with --resume)


def main() -> None:
    """Entry point: errors trainforge raises on purpose print as one message, exit code 1; so
    does an optional dependency found missing on the way (naming the extra that installs it),
    where a command did not check for it up front (`_extras.require_extra`).

    The cyclic garbage collector is off for the call (`run` turns it back on): a command's
    start-up is mostly imports, whose many new objects set the collector off again and again
    for nothing, and every other command is short: what it allocates goes at exit.
    """
    gc.disable()
    try:
        app()
    except TrainforgeError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except ImportError as exc:
        extra = _extras.extra_for(exc)
        if extra is None:
            raise
        typer.echo(f"error: {exc}: the optional {extra!r} dependencies are not installed: "
                   f"{_extras.install_hint(extra)}", err=True)
        sys.exit(1)


def _launch_flags(nproc_per_node: int | None, nnodes: str, rdzv_endpoint: str | None,
                  rdzv_id: str | None, max_restarts: int) -> list[str]:
    """The launch flags of `run` as given (a resume hint repeats them: on every node, with a
    multi-node job)."""
    if nproc_per_node is None:
        return []
    flags = ["--nproc-per-node", str(nproc_per_node)]
    if nnodes != "1":
        flags += ["--nnodes", nnodes, "--rdzv-endpoint", str(rdzv_endpoint),
                  "--rdzv-id", str(rdzv_id)]
    return flags + (["--max-restarts", str(max_restarts)] if max_restarts else [])


@app.command()
def run(
    spec: str,
    overrides: Overrides = None,
    as_json: _render.JsonFlag = False,
    nproc_per_node: NprocPerNode = None,
    nnodes: Nnodes = "1",
    rdzv_endpoint: RdzvEndpoint = None,
    rdzv_id: RdzvId = None,
    max_restarts: MaxRestarts = 0,
    resume: Resume = None,
    allow_neutral_changes: AllowNeutralChanges = False,
    reproduces: Reproduces = None,
) -> None:
    """Run the pipeline SPEC declares, as one tracked run.

    With --nproc-per-node, the run trains over torchrun workers (on one node or several).
    """
    if nproc_per_node is None and (nnodes != "1" or rdzv_endpoint or rdzv_id or max_restarts):
        _render.fail("--nnodes, --rdzv-endpoint, --rdzv-id and --max-restarts need "
                     "--nproc-per-node", 2)
    with started(trains=nproc_per_node is None):  # a launcher's workers train, it does not
        from trainforge.pipeline import Launch, launch_pipeline, parse_nodes, run_pipeline

    gc.enable()  # a run lasts: its cycles must be collected (`main` turned this off)
    if not as_json:
        _render.setup_logging()
    result: PipelineResult | None
    try:
        with _render.warnings_on_stderr():
            if nproc_per_node is None:
                result = run_pipeline(spec, overrides or [], session=_context.session(),
                                      resume=resume, allow_neutral_changes=allow_neutral_changes,
                                      listener=None if as_json else _render.print_step,
                                      reproduces=reproduces)
            else:
                min_nodes, max_nodes = parse_nodes(nnodes)
                launch = Launch(nproc_per_node, max_nodes, rdzv_endpoint, max_restarts, rdzv_id,
                                min_nodes)
                result = launch_pipeline(spec, overrides or [], launch, resume=resume,
                                         allow_neutral_changes=allow_neutral_changes,
                                         session=_context.session(), reproduces=reproduces)
    except (SpecError, ResumeRefused) as exc:
        _render.fail(str(exc), 2)
    except RunPreempted as exc:
        again = ["trainforge", "run", spec, *(redact_argument(o) for o in overrides or []),
                 *_launch_flags(nproc_per_node, nnodes, rdzv_endpoint, rdzv_id, max_restarts),
                 "--resume", exc.run_id]
        _render.fail(f"{exc}\ncontinue it with: {shlex.join(again)}", EXIT_PREEMPTED)
    except RunFailed as exc:
        _render.fail(f"run {exc.run_id} failed:\n{exc.__cause__}", 1)
    if result is None:  # a follower of a multi-node job: the job's leader reports the run
        return
    report_pipeline(result, as_json)


def report_pipeline(result: PipelineResult, as_json: bool) -> None:
    """A finished run of the training pipeline, printed; exit 3 when a gate stopped it."""
    summary = pipeline_summary(result)
    if as_json:
        _render.emit_json(summary)
    else:
        _render.emit_fields("Pipeline finished", list(summary.items()))
        typer.echo(
            "\nLook further:\n"
            f"  trainforge runs show {result.run.run_id}\n"
            "  trainforge runs list\n"
            "  trainforge models list"
        )
    if not result.gate.passed:
        raise typer.Exit(3)


@app.command()
def validate(spec: str, overrides: Overrides = None, as_json: _render.JsonFlag = False) -> None:
    """Check SPEC (and its data contract) without running anything."""
    from trainforge.pipeline import load_checked_spec

    try:
        loaded = load_checked_spec(spec, overrides or [])
    except SpecError as exc:
        if as_json:
            _render.emit_json({"valid": False, "problems": exc.problems})
            raise typer.Exit(2) from None
        _render.fail(str(exc), 2)
    if as_json:
        _render.emit_json({"valid": True, "spec": loaded.model_dump(mode="json")})
    else:
        typer.echo(f"{spec}: valid")


runs_app.command("list")(_runs.runs_list)
runs_app.command("compare")(_runs.runs_compare)
runs_app.command("history")(_runs.runs_history)
runs_app.command("gc")(_runs.runs_gc)
runs_app.command("replay")(_runs.runs_replay)
checkpoints_app.command("list")(_checkpoints.checkpoints_list)
checkpoints_app.command("gc")(_checkpoints.checkpoints_gc)
pbt_app.command("show")(_pbt.pbt_show)
models_app.command("list")(_models.models_list)
models_app.command("show")(_models.models_show)
models_app.command("promote")(_models.models_promote)
models_app.command("rollback")(_models.models_rollback)
models_app.command("history")(_models.models_history)
models_app.command("diff")(_models.models_diff)
models_app.command("lineage")(_models.models_lineage)
models_app.command("alias")(_models.models_alias)
webhooks_app.command("add")(_webhooks.webhooks_add)
webhooks_app.command("list")(_webhooks.webhooks_list)
webhooks_app.command("deliveries")(_webhooks.webhooks_deliveries)
webhooks_app.command("deliver")(_webhooks.webhooks_deliver)
webhooks_app.command("outbox")(_webhooks.webhooks_outbox)
webhooks_app.command("redeliver")(_webhooks.webhooks_redeliver)
app.command("export")(_serving.export)
app.command("serve")(_serving.serve)
app.command("predict")(_serving.predict)
app.command("server")(_server.server)
users_app.command("add")(_server.users_add)
users_app.command("set-role")(_server.users_set_role)
users_app.command("list")(_server.users_list)
tokens_app.command("create")(_server.tokens_create)
tokens_app.command("list")(_server.tokens_list)
tokens_app.command("revoke")(_server.tokens_revoke)


@runs_app.command("show")
def runs_show(run_id: _context.RunId, as_json: _render.JsonFlag = False) -> None:
    """One run in full: params, metrics, environment, error."""
    from trainforge.versioning import version_names

    store = _context.existing_store()
    run_ = _context.find_run(store, run_id)
    names = version_names(store, run_.data_version_id) if run_.data_version_id else []
    fields = run_fields(run_, store.get_experiment(run_.experiment_id).name, names)
    if as_json:
        _render.emit_json(dict(fields))
    else:
        _render.emit_fields(f"Run {run_.run_id}", fields)


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"trainforge {trainforge.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    )] = False,
) -> None:
    _context.begin()
