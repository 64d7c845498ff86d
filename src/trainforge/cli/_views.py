"""Records turned into rows and fields for display (JSON-safe values)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trainforge.entities import ModelVersion, Run, RunStatus, StageChange

if TYPE_CHECKING:
    from trainforge.pipeline import PipelineResult

HEADLINE_METRICS = ("roc_auc", "accuracy", "f1", "macro_f1", "r2", "mse", "mae")


def short_metrics(metrics: dict[str, float], prefix: str = "test_") -> str:
    """The headline test metrics of a run or model version, for one table cell."""
    picked = [(name, metrics[prefix + name]) for name in HEADLINE_METRICS
              if prefix + name in metrics]
    return " ".join(f"{name}={value:.4g}" for name, value in picked[:3])


def process_state(run: Run) -> str | None:
    """For a `running` run: "alive", or "gone" when its process is (same host: no such pid;
    elsewhere: its heartbeat is stale), which `runs gc` would mark crashed; None otherwise."""
    if run.status is not RunStatus.RUNNING:
        return None
    from trainforge.tracking import is_alive  # only when a run is running: a listing's start

    return "alive" if is_alive(run) else "gone"


def run_row(run: Run, experiment_names: dict[str, str]) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "experiment": experiment_names.get(run.experiment_id, run.experiment_id),
        "status": run.status.value,
        "process": process_state(run),
        "parent_run_id": run.parent_run_id,
        "started": run.started_at.isoformat(timespec="seconds"),
        "seconds": round(run.duration_s, 1) if run.duration_s is not None else None,
        "metrics": run.metrics,
        "model_version": run.tags.get("model_version"),
        "error": run.error,
    }


def run_fields(run: Run, experiment: str, data_names: Sequence[str] = ()
               ) -> list[tuple[str, Any]]:
    """A run's fields as `runs show` prints them; `data_names`: its data version's names
    (`NAME@NUMBER`)."""
    return [
        ("run_id", run.run_id),
        ("experiment", experiment),
        ("status", run.status.value),
        ("process", process_state(run)),
        ("parent_run_id", run.parent_run_id),
        ("error", run.error),
        ("started_at", run.started_at.isoformat()),
        ("ended_at", run.ended_at.isoformat() if run.ended_at else None),
        ("git_commit", run.git_commit),
        ("git_dirty", run.git_dirty),
        ("data_version", run.data_version_id),
        ("data_version_names", list(data_names)),
        ("artifact_uri", run.artifact_uri),
        ("metrics", run.metrics),
        ("tags", run.tags),
        ("spec_hash", run.spec_hash),
        ("system", run.system),
        ("environment", run.environment),
        ("params", run.params),
    ]


def model_row(version: ModelVersion) -> dict[str, Any]:
    return {
        "model": version.model_name,
        "version": version.version,
        "stage": version.stage.value,
        "run_id": version.run_id,
        "created": version.created_at.isoformat(timespec="seconds"),
        "metrics": version.metrics,
    }


def version_fields(version: ModelVersion) -> list[tuple[str, Any]]:
    return [
        ("model", version.model_name),
        ("version", version.version),
        ("label", version.label),
        ("stage", version.stage.value),
        ("run_id", version.run_id),
        ("data_version", version.data_version_id),
        ("git_commit", version.git_commit),
        ("features_hash", version.features_hash),
        ("environment", version.environment),
        ("artifact_uri", version.artifact_uri),
        ("created_at", version.created_at.isoformat()),
        ("metrics", version.metrics),
    ]


def change_row(change: StageChange) -> dict[str, Any]:
    """One stage history entry; `gates` says how many passed and names those that failed."""
    failed = [g["gate"] for g in change.gate_report if not g.get("passed")]
    passed = len(change.gate_report) - len(failed)
    gates = f"{passed}/{len(change.gate_report)} passed" if change.gate_report else "-"
    return {
        "id": change.change_id,
        "when": change.created_at.isoformat(timespec="seconds"),
        "version": change.version,
        "from": None if change.from_stage is None else change.from_stage.value,
        "to": change.to_stage.value,
        "outcome": change.outcome.value,
        "forced": change.forced,
        "user": change.user,
        "reason": change.reason,
        "gates": gates + (f"; failed: {', '.join(failed)}" if failed else ""),
        "gate_report": list(change.gate_report),
    }


def pipeline_summary(result: PipelineResult) -> dict[str, Any]:
    """The closing summary of `trainforge run`: run, test metrics, model version, stage."""
    version = result.model_version
    return {
        "run_id": result.run.run_id,
        "status": result.run.status.value,
        **result.evaluation.prefixed(),
        "gates": "passed" if result.gate.passed else "failed: " + "; ".join(result.gate.failures),
        "model_version": f"{version.model_name}/{version.version}" if version else None,
        "stage": version.stage.value if version else "not registered",
        "data_version": result.run.data_version_id,
    }
