"""Registering a model trained anywhere (the server's `POST /api/v1/models/register`).

A registration names where the model's artifacts are (`artifact_uri`). When that is the
artifact folder of a run this store knows (`ArtifactStore.run_uri(run_id)`), the version is
that run's: its lineage (data version, git commit, environment) and the threshold gates its
spec declares (`evaluation.gates`, over the run's metrics with the given ones over them), as
the pipeline's register step decides them. Otherwise a run is recorded for the registration
itself (experiment `registered`, ended `completed`, its `registration` system entry naming the
model, label, URI and user, its summary the metrics given), so every version has a run; no
spec gates it.

Rules:
- `label` is the version the client gave (the seed's `"3.1"`): letters, digits and `. _ + -`,
  starting with a letter or digit, at most 64 characters, not digits only (a number names the
  store's own versions) and not a stage's name; unique per model (`Conflict`). It names the
  version wherever a version is named (`resolve_version`).
- `stage` is `staging` (the gates must pass, else `GatesFailed` with each gate's result and
  nothing registered) or `none` (registered whatever the gates say). Canary and production
  are reached by promotion, through their own gates.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Protocol

from trainforge.entities import ModelStage, ModelVersion, Run, RunStatus
from trainforge.errors import Conflict, GatesFailed, NotFound
from trainforge.registry._lineage import environment_summary
from trainforge.registry._promotion import threshold_gates
from trainforge.storage import ExperimentStore, MetricStore, RegistryStore, RunStore
from trainforge.storage.artifacts import ArtifactStore
from trainforge.tracking import RegistrationEntry, SystemRecord, recorded_spec_of

REGISTERED_EXPERIMENT = "registered"
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
_REGISTRATION_STAGES = (ModelStage.STAGING, ModelStage.NONE)


class RegistrationStore(RegistryStore, RunStore, MetricStore, ExperimentStore, Protocol):
    """What a registration reads and writes: model versions, runs and their experiments."""


def check_label(label: str) -> str:
    """`label` unchanged, or `ValueError` saying what a label must be."""
    if (not _LABEL.fullmatch(label) or label.isdigit()
            or label in {stage.value for stage in ModelStage}):
        raise ValueError(f"version label {label!r}: expected letters, digits and . _ + - "
                         "(at most 64, starting with a letter or digit), not digits only and "
                         "not a stage's name")
    return label


def register_version(store: RegistrationStore, artifacts: ArtifactStore, model_name: str,
                     label: str, artifact_uri: str, metrics: Mapping[str, float],
                     stage: ModelStage | str = ModelStage.STAGING, *,
                     user: str = "") -> ModelVersion:
    """Register the model at `artifact_uri` as the next version of `model_name`, labelled
    `label`; see the module docstring. `ValueError` for a bad label or stage, `GatesFailed`
    when the gates of a `staging` registration fail, `Conflict` for a label taken."""
    check_label(label)
    target = ModelStage(stage)
    if target not in _REGISTRATION_STAGES:
        raise ValueError(f"stage {target.value!r}: a version is registered to staging or "
                         "none, then promoted (PUT .../versions/{version}/stage)")
    run = _run_of(store, artifacts, artifact_uri)
    if run is not None:
        _check_gates(run, {**run.metrics, **metrics}, model_name, label, target)
        return store.create_model_version(
            model_name, run.run_id, artifact_uri, target, dict(metrics),
            data_version_id=run.data_version_id, git_commit=run.git_commit,
            environment=environment_summary(run.environment), user=user, label=label)
    _check_label_free(store, model_name, label)
    experiment = store.get_or_create_experiment(REGISTERED_EXPERIMENT).experiment_id
    entry = RegistrationEntry(model=model_name, label=label, artifact_uri=artifact_uri,
                              user=user)
    registration = store.create_run(experiment, {}, {}, artifact_uri, run_id=uuid.uuid4().hex,
                                    system=SystemRecord(registration=entry).entries())
    store.set_summary_metrics(registration.run_id, dict(metrics))
    try:
        version = store.create_model_version(model_name, registration.run_id, artifact_uri,
                                             target, dict(metrics), user=user, label=label)
    except Exception as exc:  # the label taken meanwhile, the database gone: said on the run
        store.end_run(registration.run_id, RunStatus.FAILED, f"not registered: {exc}")
        raise
    store.end_run(registration.run_id, RunStatus.COMPLETED)
    return version


def _check_label_free(store: RegistryStore, model_name: str, label: str) -> None:
    """`Conflict` before a registration run is recorded for a label taken (the store would
    refuse the version only after it)."""
    try:
        taken = store.get_model_version_by_label(model_name, label)
    except NotFound:
        return
    raise Conflict(f"model {model_name!r} has label {label!r} already (version "
                   f"{taken.version})")


def _run_of(store: RunStore, artifacts: ArtifactStore, artifact_uri: str) -> Run | None:
    """The run whose artifact folder `artifact_uri` is, if this store knows one."""
    run_id = artifact_uri.rstrip("/").rpartition("/")[2]
    if not run_id or artifacts.run_uri(run_id).rstrip("/") != artifact_uri.rstrip("/"):
        return None
    try:
        return store.get_run(run_id)
    except NotFound:
        return None


def _check_gates(run: Run, metrics: Mapping[str, float], model_name: str, label: str,
                 target: ModelStage) -> None:
    spec = recorded_spec_of(run)
    if target is not ModelStage.STAGING or spec is None:
        return
    outcomes = threshold_gates(metrics, spec.evaluation.gates)
    failed = [o.message for o in outcomes if not o.passed]
    if failed:
        raise GatesFailed(f"model {model_name!r} {label}: gates failed: {'; '.join(failed)}",
                          [o.to_dict() for o in outcomes])
