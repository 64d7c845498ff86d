"""What a model version came from and how two versions differ, as JSON-safe records: the
run, data version, feature pipeline hash, git commit, environment and parent runs (lineage),
and metrics, params and lineage side by side (diff)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

from trainforge.config import flatten_paths
from trainforge.entities import ModelVersion, Run, StageChange
from trainforge.errors import NotFound
from trainforge.storage.contracts import DataVersionStore, RegistryStore, RunStore, all_items

# The environment facts a model version keeps (the run keeps all of them).
ENVIRONMENT_SUMMARY = ("python", "torch", "cuda", "platform", "hostname")
_PARENTS_SHOWN = 20  # a chain of parent runs longer than this is cut (and says so)


class LineageStore(RegistryStore, RunStore, DataVersionStore, Protocol):
    """What lineage reads: versions, their runs and data versions."""


def environment_summary(environment: Mapping[str, Any]) -> dict[str, Any]:
    """The facts of `ENVIRONMENT_SUMMARY` a run's environment holds, plus the trainforge
    version when the run recorded its packages."""
    summary = {key: environment[key] for key in ENVIRONMENT_SUMMARY if key in environment}
    packages = environment.get("packages")
    if isinstance(packages, Mapping) and "trainforge" in packages:
        summary["trainforge"] = packages["trainforge"]
    return summary


def lineage(store: LineageStore, version: ModelVersion) -> dict[str, Any]:
    """Where the version came from: run, experiment, data version, feature pipeline hash,
    git commit, environment, parent runs (nearest first), aliases naming it."""
    run = store.get_run(version.run_id)
    data: dict[str, Any] | None = None
    if version.data_version_id is not None:
        try:
            stored = store.get_data_version(version.data_version_id)
            data = {"id": stored.data_version_id, "source": stored.source,
                    "rows": stored.num_rows, "files": len(stored.files)}
        except NotFound:
            data = {"id": version.data_version_id}
    aliases = [alias for alias, target in store.list_aliases(version.model_name).items()
               if target == version.version]
    return {
        "model": version.model_name, "version": version.version, "stage": version.stage.value,
        "aliases": aliases, "run_id": run.run_id, "experiment_id": run.experiment_id,
        "run_status": run.status.value, "data_version": data,
        "features_hash": version.features_hash, "git_commit": version.git_commit,
        "git_dirty": run.git_dirty, "environment": version.environment or
        environment_summary(run.environment), "parent_runs": _parents(store, run),
        "artifact_uri": version.artifact_uri, "created_at": version.created_at.isoformat(),
    }


def diff(store: LineageStore, left: ModelVersion, right: ModelVersion) -> dict[str, Any]:
    """Two versions side by side: every metric, the params that differ (dotted paths; how
    many are equal) and the lineage fields, each as `[left, right]`."""
    params = [flatten_paths(store.get_run(v.run_id).params) for v in (left, right)]
    keys = sorted(set(params[0]) | set(params[1]))
    differing = {k: [params[0].get(k), params[1].get(k)] for k in keys
                 if params[0].get(k) != params[1].get(k)}
    metric_keys = sorted(set(left.metrics) | set(right.metrics))
    sides = [lineage(store, left), lineage(store, right)]
    shown = ("stage", "run_id", "data_version", "features_hash", "git_commit", "environment",
             "created_at")
    return {
        "versions": [left.version, right.version],
        "metrics": {k: [_number(left.metrics.get(k)), _number(right.metrics.get(k))]
                    for k in metric_keys},
        "params": differing, "params_equal": len(keys) - len(differing),
        "lineage": {k: [sides[0][k], sides[1][k]] for k in shown},
    }


def history(store: RegistryStore, model_name: str) -> list[StageChange]:
    """The model's stage history, oldest first; `NotFound` for a model with no versions."""
    changes = all_items(lambda cursor: store.list_stage_changes(model_name, cursor=cursor))
    if not changes and not store.list_model_versions(model_name, limit=1).items:
        raise NotFound(f"model {model_name!r} not found")
    return changes


def _parents(store: RunStore, run: Run) -> list[str]:
    chain: list[str] = []
    current = run
    while current.parent_run_id is not None and len(chain) < _PARENTS_SHOWN:
        chain.append(current.parent_run_id)
        try:
            current = store.get_run(current.parent_run_id)
        except NotFound:
            break
    return chain


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value
