"""Registered pipelines: `register_pipeline` stores a spec, checked and resolved, under an id
(the seed's `pipelines` table); `resolve_submission` applies a submitted `config` to it (the
body of the seed's `POST /api/v1/pipelines/runs`), checked against what the spec's `submit:`
section maps and against the spec, naming what it refuses before anything is queued.

`config` holds four keys, each optional: `data_source` and `model_type` set the spec paths
`submit.data_source` and `submit.model_type` name (`data.source`, `model.type`);
`hyperparams` sets, for each name `submit.hyperparams` maps, the spec path it names; and
`resources` says what the job needs (`gpus`, `memory`, `labels`), checked here and kept
for the job queue. Nothing else may be set: an unknown key, a hyperparameter the pipeline
does not map, or a value the spec refuses is a `SpecError` naming it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, field_validator

from trainforge.config import PipelineSpec, SubmitSpec, apply_values, parse_model
from trainforge.entities import Pipeline
from trainforge.errors import SpecError
from trainforge.pipeline._checks import check_spec
from trainforge.pipeline._plan import plan_pipeline
from trainforge.storage import ExperimentStore

# A pipeline id: what a URL path segment and a file name take as they are.
_PIPELINE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

# A Kubernetes-style quantity: 64Gi, 512Mi, 2G, 1000000.
_MEMORY = re.compile(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?")


class JobResources(BaseModel):
    """What a submitted run's job needs (`config.resources`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpus: NonNegativeInt = Field(0, description="GPUs on one machine; more than one runs "
                                 "torchrun with that many processes")
    memory: str | None = Field(None, description="host memory, as 64Gi")
    labels: list[str] = Field(default_factory=list, description="labels a worker must have")

    @field_validator("memory")
    @classmethod
    def _a_quantity(cls, value: str | None) -> str | None:
        if value is not None and not _MEMORY.fullmatch(value):
            raise ValueError(f"expected an amount such as 64Gi, 512Mi or 2G, got {value!r}")
        return value


class SubmittedConfig(BaseModel):
    """The `config` of a submitted run, as the seed writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data_source: str | None = Field(None, min_length=1)
    model_type: str | None = Field(None, min_length=1)
    hyperparams: dict[str, Any] = Field(default_factory=dict)
    resources: JobResources = JobResources()


@dataclass(frozen=True)
class Submission:
    """A registered pipeline's spec with a config applied: what a job of it runs."""

    pipeline_id: str
    spec: PipelineSpec
    values: dict[str, Any]  # spec path -> the value the config gave it
    resources: JobResources

    @property
    def overrides(self) -> list[str]:
        """The values as `path=value` overrides (JSON values, which YAML reads back)."""
        return [f"{path}={json.dumps(value)}" for path, value in self.values.items()]


def registration(spec: str | Path, pipeline_id: str, *, user: str) -> Pipeline:
    """What registering the spec at `spec` under `pipeline_id` stores: the spec checked as
    `trainforge run` checks it and resolved (paths absolute, credentials left out), its DAG's
    wiring, `user` as who registered it; `SpecError` for a bad id or spec. No store is
    touched, so a refusal leaves nothing behind."""
    if not _PIPELINE_ID.fullmatch(pipeline_id):
        raise SpecError([f"--id {pipeline_id!r}: expected 1 to 64 letters, digits, '_', '.' "
                         "or '-', starting with a letter or digit"])
    plan = plan_pipeline(spec)
    return Pipeline(pipeline_id=pipeline_id, name=plan.spec.name,
                    dag_config=plan.dag(None).describe(), created_by=user,
                    spec=plan.spec.model_dump(mode="json"))


def register_pipeline(store: ExperimentStore, spec: str | Path, pipeline_id: str, *,
                      user: str, replace: bool = False) -> Pipeline:
    """`registration` stored: `Conflict` for an id registered with another spec (unless
    `replace`)."""
    return store.register_pipeline(registration(spec, pipeline_id, user=user), replace=replace)


def resolve_submission(pipeline: Pipeline, config: object) -> Submission:
    """`pipeline`'s registered spec with `config` applied, checked as `trainforge run` checks
    a spec; `SpecError` naming each key of `config` it refuses."""
    if not isinstance(config, Mapping):
        raise SpecError([f"config: expected a mapping (a JSON object) of data_source, "
                         f"model_type, hyperparams and resources, got {_kind(config)}"])
    if pipeline.spec is None:
        raise SpecError([f"pipeline {pipeline.pipeline_id!r} was recorded by its runs, not "
                         "registered: register it with `trainforge pipelines register SPEC "
                         f"--id {pipeline.pipeline_id}` before submitting runs of it"])
    source = f"pipeline {pipeline.pipeline_id!r}"
    registered = parse_model(PipelineSpec, pipeline.spec, source)
    submitted = parse_model(SubmittedConfig, dict(config), "config")
    setting = _spec_paths(registered, submitted, source)
    problems = []
    for key, (path, value) in setting.items():
        try:
            parse_model(PipelineSpec, apply_values(pipeline.spec, {path: value}, source), source)
        except SpecError as exc:
            problems += [f"config.{key} (sets {path}): "
                         f"{p.removeprefix(f'{source}: ').removeprefix(f'{path}: ')}"
                         for p in exc.problems]
    if problems:
        raise SpecError(problems)
    values = dict(setting.values())
    spec = parse_model(PipelineSpec, apply_values(pipeline.spec, values, source), source)
    try:
        check_spec(spec, source)
    except SpecError as exc:
        raise SpecError([_named_by_config(p, setting) for p in exc.problems]) from None
    return Submission(pipeline.pipeline_id, spec, values, submitted.resources)


def submission_keys(pipeline: Pipeline) -> list[str]:
    """The keys a submitted config of `pipeline` may set (none: it is not registered)."""
    if pipeline.spec is None:
        return []
    return [*SubmitSpec.model_validate(pipeline.spec.get("submit") or {}).paths(), "resources"]


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    return f"the text {value!r}" if isinstance(value, str) else repr(value)


def _spec_paths(spec: PipelineSpec, config: SubmittedConfig,
                source: str) -> dict[str, tuple[str, Any]]:
    """Each key the config sets -> (the spec path it sets, its value)."""
    mapping = spec.submit
    setting: dict[str, tuple[str, Any]] = {}
    if config.data_source is not None:
        setting["data_source"] = (mapping.data_source, config.data_source)
    if config.model_type is not None:
        setting["model_type"] = (mapping.model_type, config.model_type)
    unknown = sorted(set(config.hyperparams) - set(mapping.hyperparams))
    if unknown:
        mapped = (", ".join(sorted(mapping.hyperparams))
                  or "none (its spec has no submit.hyperparams)")
        raise SpecError([f"config.hyperparams.{name}: {source} maps no hyperparameter of this "
                         f"name; it maps: {mapped}" for name in unknown])
    for name, value in config.hyperparams.items():
        setting[f"hyperparams.{name}"] = (mapping.hyperparams[name], value)
    return setting


def _named_by_config(problem: str, setting: dict[str, tuple[str, Any]]) -> str:
    """`problem` with the config key that set the field it names, where one did."""
    for key, (path, _) in setting.items():
        if f": {path}:" in problem or f": {path} " in problem:
            return f"{problem} (set by config.{key})"
    return problem
