"""Promotion gates: pure decisions over figures already measured, one `GateOutcome` each.

Which gates a target stage applies (`GATES_BY_STAGE`): production all of them; canary the
thresholds, the slice gaps and export parity (a canary serves real traffic, but is compared
with production by that traffic, not by a gate); staging the thresholds (a version registered
without them passing, or restored from archived, must pass them again); archived none.

- threshold (`evaluation.gates`): the metric must be measured, a number, within [min, max]
  (the pipeline's gate step decides the same way: `check_gates`);
- max_drop: the candidate's metric may be worse than production's by at most `max`, both
  measured on the candidate's test split (the caller re-scores production; stored numbers are
  never compared). Worse is lower, except for the metrics in `LOWER_IS_BETTER`. With no
  production version the gate passes, saying so;
- max_slice_gap: the candidate's `test_slice_gap_<metric>` at most `max`; a run that recorded
  no slices fails it;
- export_parity: the run's export report has an accepted ONNX variant; none fails it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainforge.config import GateSpec, MetricLimitSpec
from trainforge.entities import ModelStage

LOWER_IS_BETTER = frozenset({"log_loss", "mse", "rmse", "mae", "calibration_error", "ece",
                             "brier"})
THRESHOLD, MAX_DROP, SLICE_GAP, EXPORT_PARITY = ("threshold", "max_drop", "max_slice_gap",
                                                 "export_parity")
GATES_BY_STAGE: dict[ModelStage, tuple[str, ...]] = {
    ModelStage.PRODUCTION: (THRESHOLD, MAX_DROP, SLICE_GAP, EXPORT_PARITY),
    ModelStage.CANARY: (THRESHOLD, SLICE_GAP, EXPORT_PARITY),
    ModelStage.STAGING: (THRESHOLD,),
    ModelStage.ARCHIVED: (),
    ModelStage.NONE: (),
}


@dataclass(frozen=True)
class GateOutcome:
    """One gate's result: its name (`max_drop:test_roc_auc`), whether it passed, the figures
    it decided on (JSON-safe: NaN shown as None) and a sentence saying why."""

    gate: str
    passed: bool
    message: str
    figures: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        figures = {k: None if isinstance(v, float) and not math.isfinite(v) else v
                   for k, v in self.figures.items()}
        return {"gate": self.gate, "passed": self.passed, "figures": figures,
                "message": self.message}


def threshold_gates(metrics: Mapping[str, float], gates: Sequence[GateSpec]) -> list[GateOutcome]:
    """One outcome per threshold of `evaluation.gates`, over the version's metrics."""
    return [_threshold(metrics, gate) for gate in gates]


def _threshold(metrics: Mapping[str, float], gate: GateSpec) -> GateOutcome:
    name = f"{THRESHOLD}:{gate.metric}"
    figures: dict[str, Any] = {"min": gate.min, "max": gate.max}
    if gate.metric not in metrics or metrics[gate.metric] is None:
        return GateOutcome(name, False, f"{gate.metric}: not measured (have "
                           f"{', '.join(sorted(metrics)) or 'no metrics'})", figures)
    value = figures["value"] = metrics[gate.metric]
    if math.isnan(value):
        return GateOutcome(name, False, f"{gate.metric}: is NaN", figures)
    if gate.min is not None and value < gate.min:
        return GateOutcome(name, False, f"{gate.metric} >= {gate.min}: got {value:.4g}",
                           figures)
    if gate.max is not None and value > gate.max:
        return GateOutcome(name, False, f"{gate.metric} <= {gate.max}: got {value:.4g}",
                           figures)
    return GateOutcome(name, True, f"{gate.metric} {value:.4g} within limits", figures)


def max_drop_gate(
    limit: MetricLimitSpec, candidate: Mapping[str, float],
    production: Mapping[str, float] | None, production_version: str | None,
) -> GateOutcome:
    """Candidate against production, each scored on the candidate's test split."""
    name = f"{MAX_DROP}:{limit.metric}"
    if production is None:
        return GateOutcome(name, True, "no production version to compare with",
                           {"max": limit.max})
    ours, theirs = candidate.get(limit.metric), production.get(limit.metric)
    figures: dict[str, Any] = {"max": limit.max, "candidate": ours, "production": theirs,
                               "production_version": production_version}
    if ours is None or theirs is None or math.isnan(ours) or math.isnan(theirs):
        return GateOutcome(name, False, f"{limit.metric} could not be measured on both models",
                           figures)
    bare = limit.metric.removeprefix("test_")
    drop = ours - theirs if bare in LOWER_IS_BETTER else theirs - ours
    figures["drop"] = drop
    compared = (f"{limit.metric} {ours:.4g} vs production (version {production_version}) "
                f"{theirs:.4g} re-scored on the same test split: drop {drop:.4g}")
    if drop > limit.max:
        return GateOutcome(name, False, f"{compared} > max {limit.max}", figures)
    return GateOutcome(name, True, f"{compared} <= max {limit.max}", figures)


def slice_gap_gate(limit: MetricLimitSpec, metrics: Mapping[str, float]) -> GateOutcome:
    """The recorded gap between the best and worst slice on `limit.metric`."""
    name = f"{SLICE_GAP}:{limit.metric}"
    key = f"test_slice_gap_{limit.metric}"
    value = metrics.get(key)
    if value is None or math.isnan(value):
        return GateOutcome(name, False, f"the run recorded no slices ({key} is missing): set "
                           "evaluation slices to measure it", {"max": limit.max})
    figures = {"max": limit.max, "gap": value}
    if value > limit.max:
        return GateOutcome(name, False, f"{key} {value:.4g} > max {limit.max}", figures)
    return GateOutcome(name, True, f"{key} {value:.4g} <= max {limit.max}", figures)


def export_parity_gate(report: Mapping[str, Any] | None) -> GateOutcome:
    """At least one accepted ONNX variant in the run's `export/report.json` (None: absent)."""
    if report is None:
        return GateOutcome(EXPORT_PARITY, False, "the run has no export report: run "
                           "`trainforge export` for this version first")
    variants = [v for v in report.get("variants", []) if isinstance(v, dict)]
    accepted = [str(v.get("name")) for v in variants
                if str(v.get("name", "")).startswith("onnx") and v.get("accepted") is True]
    figures = {"accepted": accepted, "rejected": {str(v.get("name")): v.get("reason")
                                                  for v in variants if not v.get("accepted")}}
    if not accepted:
        return GateOutcome(EXPORT_PARITY, False, "no ONNX export passed its parity check",
                           figures)
    return GateOutcome(EXPORT_PARITY, True, f"accepted: {', '.join(accepted)}", figures)
