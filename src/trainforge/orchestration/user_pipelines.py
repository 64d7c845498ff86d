"""A user pipeline from where it is declared, run as one tracked run with a session's store,
artifact root and value store; and resumed by its pipeline run id.

    load_pipeline    "package.module:attribute" (a `Pipeline`, a `Dag`, or a function making
                     one) or a YAML file (`name`, `steps`, `max_parallel`, `retries`,
                     `backoff`, `retry_on`, `timeout`) → the DAG, and the source a resume
                     rebuilds it from
    run_steps        the DAG through `drive` (`InProcessRunner`), recording to a tracked run in the
                     experiment named after the pipeline, in the session it is given
    resume_steps     a pipeline run again, from its recorded source (the code as it is now)
"""

from __future__ import annotations

import importlib
import inspect
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from trainforge.entities import Pipeline as PipelineRecord
from trainforge.entities import PipelineRunStatus
from trainforge.errors import ResumeRefused, SpecError
from trainforge.orchestration.dag import Dag, RetryPolicy
from trainforge.orchestration.driver import drive
from trainforge.orchestration.runner import (
    PipelineOutcome,
    RunOptions,
    StepListener,
)
from trainforge.orchestration.steps import (
    Pipeline,
    steps_from_yaml,
    yaml_retry,
    yaml_seconds,
)
from trainforge.session import Session

_YAML_KEYS = {"name", "steps", "max_parallel", "retries", "backoff", "retry_on", "timeout"}


def load_pipeline(target: str) -> tuple[Dag, dict[str, Any]]:
    """(the DAG, its source) of a YAML file or a `module:attribute`. Modules import from the
    working directory (and a YAML file's folder), as `python -m` would."""
    path = Path(target)
    _import_from(Path.cwd())
    if path.suffix in (".yaml", ".yml") or path.is_file():
        _import_from(path.resolve().parent)
        return _from_yaml(path), {"yaml": str(path.resolve())}
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise SpecError([f"{target}: expected a YAML file or 'package.module:attribute'"])
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise SpecError([f"{target}: does not import: {type(exc).__name__}: {exc}"]) from exc
    if callable(found) and not isinstance(found, (Pipeline, Dag)):
        try:
            inspect.signature(found).bind()
        except TypeError as exc:
            raise SpecError([f"{target}: a function that needs arguments ({exc}); expected a "
                             "Pipeline, a Dag or a function of none making one"]) from exc
        found = found()
    if isinstance(found, Pipeline):
        return found.dag, {"python": target}
    if isinstance(found, Dag):
        return found, {"python": target}
    raise SpecError([f"{target}: is a {type(found).__name__}, expected a Pipeline or a Dag"])


def _import_from(folder: Path) -> None:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def _from_yaml(path: Path) -> Dag:
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise SpecError([f"{path}: cannot be read: {exc}"]) from exc
    except yaml.YAMLError as exc:
        raise SpecError([f"{path}: is not valid YAML: {exc}"]) from exc
    if not isinstance(document, dict):
        raise SpecError([f"{path}: expected a mapping with name and steps"])
    unknown = sorted(set(document) - _YAML_KEYS)
    if unknown:
        raise SpecError([f"{path}: unknown fields {unknown} (expected some of "
                         f"{sorted(_YAML_KEYS)})"])
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError([f"{path}: name: expected the pipeline's name"])
    steps = steps_from_yaml(document.get("steps"), str(path), path.resolve().parent)
    max_parallel = document.get("max_parallel", 1)
    if not isinstance(max_parallel, int) or isinstance(max_parallel, bool) or max_parallel < 1:
        raise SpecError([f"{path}: max_parallel: {max_parallel!r} (expected a whole number "
                         ">= 1)"])
    retry = yaml_retry(document, str(path), ": ") or RetryPolicy()
    try:
        return Dag(name, tuple(steps), max_parallel=max_parallel, retry=retry,
                   timeout_s=yaml_seconds(document, "timeout", str(path), ": "))
    except SpecError as exc:
        raise SpecError([f"{path}: {problem}" for problem in exc.problems]) from exc


def run_steps(dag: Dag, session: Session, *, options: RunOptions | None = None,
              source: Mapping[str, Any] | None = None, listener: StepListener | None = None,
              resume: str | None = None) -> PipelineOutcome:
    """Run `dag` as a new pipeline run (or continue `resume`) recording to a tracked run of
    `session`'s store."""
    from trainforge.tracking import SystemRecord, open_run, process_record

    store = session.store
    store.upsert_pipeline(PipelineRecord(dag.name, dag.name, dag.describe()))
    run_id = None
    if resume is not None:
        run_id = store.get_pipeline_run(resume).run_id
    pipeline_run_id = resume or uuid.uuid4().hex
    handle = open_run(dag.name, session, resume=run_id, pipeline_id=dag.name,
                      system=SystemRecord(pipeline_source=dict(source or {}),
                                          process=process_record(session.user).process))
    if run_id is not None:
        handle.set_system(process_record(session.user))  # the process continuing it now
    with handle:
        return drive(dag, session, handle, source=source, resume=resume,
                     pipeline_run_id=pipeline_run_id, options=options, listener=listener)


def resume_steps(pipeline_run_id: str, session: Session, *,
                 listener: StepListener | None = None) -> PipelineOutcome:
    """Continue pipeline run `pipeline_run_id` (an id or unique prefix): its DAG rebuilt from
    its source with the code as it is now; the steps without stored outputs and those after
    them run. `ResumeRefused` when it succeeded, was started without a source, or is still
    running (its tracked run's process alive on this host, or its heartbeat fresh)."""
    from trainforge.tracking import is_alive, where_running

    store = session.store
    record = store.find_pipeline_run(pipeline_run_id)
    if record.status is PipelineRunStatus.SUCCEEDED:
        raise ResumeRefused(f"pipeline run {record.pipeline_run_id} succeeded; there is "
                            "nothing to resume")
    run = store.get_run(record.run_id) if record.run_id is not None else None
    if record.status is PipelineRunStatus.RUNNING and run is not None and is_alive(run):
        raise ResumeRefused(f"pipeline run {record.pipeline_run_id} is still running "
                            f"({where_running(run)}); stop it first")
    target = record.source.get("python") or record.source.get("yaml")
    if not target:
        raise ResumeRefused(f"pipeline run {record.pipeline_run_id} was started without a "
                            "source to build it from again; resume it from Python with "
                            "run_steps(dag, session, resume=...)")
    dag, source = load_pipeline(str(target))
    if dag.name != record.pipeline_id:
        raise ResumeRefused(f"pipeline run {record.pipeline_run_id} ran pipeline "
                            f"{record.pipeline_id!r}; {target} now declares {dag.name!r}")
    return run_steps(dag, session, source=source, listener=listener,
                     resume=record.pipeline_run_id)
