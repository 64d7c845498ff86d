"""`trainforge tune ...` over `trainforge.tuning`: run a study, join one, read them.

    trainforge tune SPEC [OVERRIDES] [--trials N] [--workers N] [--study NAME]
    trainforge tune-worker STUDY
    trainforge tune show STUDY
    trainforge tune list

Thin: each command calls one library function and renders what it returns. A bad spec or
search space exits 2 before any run exists; a study that does not exist (show, tune-worker)
or already exists (tune) exits 1; a refit stopped by a gate exits 3, as `run` does.
"""

from __future__ import annotations

import gc
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from trainforge._collector import started
from trainforge.cli import _context, _extras, _pbt, _render
from trainforge.errors import Conflict, NotFound, RunFailed, SpecError

Trials = Annotated[Optional[int], typer.Option(min=1, help="Trial budget (replaces "
                                               "tuning.trials).")]
Workers = Annotated[int, typer.Option(min=1, help="Local worker processes running trials.")]
StudyOption = Annotated[Optional[str], typer.Option(
    "--study", help="The study's name (default: the pipeline's name + '-tune').")]
Overrides = Annotated[Optional[list[str]], typer.Argument(help="Field overrides: a.b=value")]
TRIAL_COLUMNS = ["trial", "state", "value", "params", "run", "seconds"]


class TuneGroup(TyperGroup):
    """`tune SPEC ...` runs a study (the `run` subcommand); `tune show|list ...` read them."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer vendors click
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


tune_app = typer.Typer(cls=TuneGroup, no_args_is_help=True,
                       help="Search hyperparameters: `tune SPEC` runs the study of SPEC's "
                       "tuning: section; `tune show STUDY`, `tune list` read studies.")


@tune_app.command("run")
def tune_run(spec: str, overrides: Overrides = None, trials: Trials = None,
             workers: Workers = 1, study: StudyOption = None,
             as_json: _render.JsonFlag = False) -> None:
    """Run the study SPEC's tuning: section declares; each trial is a run nested under the
    study's run (with tuning.pbt: population-based training, members nested likewise)."""
    _extras.require_extra("trainforge tune", "tune")
    with started(trains=True):  # its trials train in this process (and in its workers)
        from trainforge.pipeline import plan_pipeline, run_pipeline  # noqa: F401 - trials run it
        from trainforge.tuning import quiet_optuna, tune

    quiet_optuna()
    gc.enable()  # a study lasts: its cycles must be collected (`main` turned this off)
    try:
        planned = plan_pipeline(spec, overrides or []).spec.tuning
    except SpecError as exc:
        _render.fail(str(exc), 2)
    if planned is not None and planned.pbt is not None:
        if trials is not None or workers != 1 or study is not None:
            _render.fail(f"{spec}: tuning.pbt: --trials, --workers and --study are for a "
                         "search; population-based training runs tuning.pbt.population members",
                         2)
        _pbt.pbt_run(spec, overrides, as_json)
        return
    try:
        with _render.warnings_on_stderr():
            result = tune(spec, overrides or [], trials=trials, workers=workers, study=study,
                          session=_context.session())
    except SpecError as exc:
        _render.fail(str(exc), 2)
    except Conflict as exc:
        _render.fail(str(exc), 1)
    except RunFailed as exc:
        _render.fail(f"run {exc.run_id} failed:\n{exc.__cause__}", 1)
    summary = result.summary
    if as_json:
        _render.emit_json({**summary.to_json(), "plots": result.plots,
                           "refit_run_id": result.refit.run.run_id if result.refit else None})
    else:
        _show(summary.to_json())
        if result.refit is not None:
            version = result.refit.model_version
            typer.echo(f"\nrefit run {result.refit.run.run_id}: "
                       + (f"registered {version.model_name} v{version.version}" if version
                          else "a gate stopped registration"))
        typer.echo(f"\nLook further:\n  trainforge tune show {summary.name}\n"
                   f"  trainforge runs show {summary.study_run_id}")
    if result.refit is not None and not result.refit.gate.passed:
        raise typer.Exit(3)


def tune_worker(study: str) -> None:
    """Join STUDY (in this machine's database settings) and run its trials until its budget is
    spent."""
    _extras.require_extra("trainforge tune-worker", "tune")
    with started(trains=True):
        from trainforge.pipeline import run_pipeline  # noqa: F401 - what its trials run
        from trainforge.tuning import quiet_optuna, run_worker

    quiet_optuna()
    gc.enable()
    try:
        with _render.warnings_on_stderr():
            ran = run_worker(study, session=_context.session())
    except NotFound as exc:
        _render.fail(str(exc), 1)
    typer.echo(f"{ran} trial(s) run")


@tune_app.command("show")
def tune_show(study: str, as_json: _render.JsonFlag = False) -> None:
    """The trials of STUDY, its best trial, parameter importances and trials per state."""
    _extras.require_extra("trainforge tune show", "tune")
    from trainforge.tuning import open_storage, read_study

    runs = _context.existing_store()
    try:
        summary = read_study(open_storage(_database()), study, runs).to_json()
    except NotFound as exc:
        _render.fail(str(exc), 1)
    if as_json:
        _render.emit_json(summary)
    else:
        _show(summary)


@tune_app.command("list")
def tune_list(as_json: _render.JsonFlag = False) -> None:
    """The studies in the database."""
    _extras.require_extra("trainforge tune list", "tune")
    from trainforge.tuning import list_studies, open_storage

    _context.existing_store()
    studies = list_studies(open_storage(_database()))
    if as_json:
        _render.emit_json(studies)
        return
    columns = ["name", "direction", "trials", "best_value", "started"]
    _render.emit_table("Studies", columns, [[s[c] for c in columns] for s in studies],
                       empty="no studies")


def _database() -> str:
    return _context.settings().database_url.get_secret_value()


def _show(summary: dict[str, Any]) -> None:
    best = summary["best"]
    _render.emit_fields(f"Study {summary['name']}", [
        ("objective", f"{summary['direction']} {summary['metric']}"),
        ("study run", summary["study_run_id"]),
        ("trials", summary["states"]),
        ("best trial", None if best is None else best["number"]),
        ("best value", None if best is None else best["value"]),
        ("best params", None if best is None else best["params"]),
        ("importances", summary["importances"] or None),
    ])
    rows = [[t["number"], t["state"], t["value"], t["params"],
             (t["run_id"] or "")[:8] or None, t["duration_s"]] for t in summary["trials"]]
    _render.emit_table("Trials", TRIAL_COLUMNS, rows, empty="no trials")
