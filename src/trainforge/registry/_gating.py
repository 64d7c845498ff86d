"""The gates of one promotion, measured: what the candidate's recorded spec declares for the
target stage, each decided by `_promotion` over figures read or re-scored here.

The candidate's run recorded its spec (its params); `evaluation.gates` gives the thresholds
and `registry.promotion` the rest. A recorded spec that no longer validates fails the
promotion (there would be no telling which gates apply); a run that recorded none (a model
registered from elsewhere, `register_version`) has no gates to pass.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from trainforge.config import PipelineSpec
from trainforge.entities import ModelStage, ModelVersion
from trainforge.errors import ArtifactError, TrainforgeError
from trainforge.export import REPORT_ARTIFACT
from trainforge.registry._promotion import (
    EXPORT_PARITY,
    GATES_BY_STAGE,
    MAX_DROP,
    SLICE_GAP,
    THRESHOLD,
    GateOutcome,
    export_parity_gate,
    max_drop_gate,
    slice_gap_gate,
    threshold_gates,
)
from trainforge.tracking import recorded_spec_of, system_of

if TYPE_CHECKING:

    from trainforge.storage.artifacts import ArtifactStore
    from trainforge.storage.contracts import RunStore



def measure_gates(
    runs: RunStore, artifacts: ArtifactStore, candidate: ModelVersion, to: ModelStage,
    production: ModelVersion | None,
) -> list[GateOutcome]:
    """Every gate the candidate's spec declares for stage `to`, decided (`production`: the
    version now in production, re-scored for `max_drop`; None when there is none)."""
    kinds = GATES_BY_STAGE[to]
    if not kinds:
        return []
    run = runs.get_run(candidate.run_id)
    if system_of(run).resolved_spec is None:
        return []  # a model registered from elsewhere: no spec declares its gates
    spec = recorded_spec_of(run)
    if spec is None:
        return [GateOutcome("spec", False, f"run {run.run_id}'s recorded spec no longer "
                            "validates: its gates cannot be read")]
    outcomes: list[GateOutcome] = []
    if THRESHOLD in kinds:
        outcomes += threshold_gates({**run.metrics, **candidate.metrics}, spec.evaluation.gates)
    promotion = spec.registry.promotion if spec.registry else None
    if promotion is None:
        return outcomes
    if MAX_DROP in kinds and promotion.max_drop:
        outcomes += _max_drop(runs, artifacts, spec, candidate, production)
    if SLICE_GAP in kinds:
        outcomes += [slice_gap_gate(limit, candidate.metrics) for limit in promotion.max_slice_gap]
    if EXPORT_PARITY in kinds and promotion.export_parity:
        outcomes.append(export_parity_gate(_export_report(artifacts, candidate.run_id)))
    return outcomes


def _max_drop(
    runs: RunStore, artifacts: ArtifactStore, spec: PipelineSpec, candidate: ModelVersion,
    production: ModelVersion | None,
) -> list[GateOutcome]:
    """Both models re-scored on the candidate's test split, one outcome per limit; a model
    that cannot be loaded or scored fails every limit, saying why."""
    limits = spec.registry.promotion.max_drop if spec.registry else []
    if production is None or production.version == candidate.version:
        return [max_drop_gate(limit, {}, None, None) for limit in limits]
    try:
        ours, theirs = _rescored_pair(runs, artifacts, spec, candidate, production)
    except TrainforgeError as exc:
        return [GateOutcome(f"{MAX_DROP}:{limit.metric}", False, f"cannot re-score: {exc}",
                            {"max": limit.max, "production_version": production.version})
                for limit in limits]
    return [max_drop_gate(limit, ours, theirs, production.version) for limit in limits]


def _rescored_pair(
    runs: RunStore, artifacts: ArtifactStore, spec: PipelineSpec, candidate: ModelVersion,
    production: ModelVersion,
) -> tuple[dict[str, float], dict[str, float]]:
    from trainforge.registry._rescore import load_golden_set, rescore
    from trainforge.train import load_stored_model

    frame = load_golden_set(artifacts, candidate.run_id)
    production_spec = recorded_spec_of(runs.get_run(production.run_id))
    production_evaluation = (production_spec or spec).evaluation
    ours = rescore(load_stored_model(artifacts, candidate.run_id), frame, spec.data,
                   spec.evaluation)
    theirs = rescore(load_stored_model(artifacts, production.run_id), frame, spec.data,
                     production_evaluation)
    return ours, theirs


def _export_report(artifacts: ArtifactStore, run_id: str) -> dict[str, Any] | None:
    try:
        report = json.loads(artifacts.get_bytes(run_id, REPORT_ARTIFACT))
    except (ArtifactError, ValueError):
        return None
    return report if isinstance(report, dict) else None
