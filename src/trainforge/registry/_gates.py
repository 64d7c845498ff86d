"""Promotion gates: pure decisions over a run's metrics."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trainforge.config import GateSpec


@dataclass(frozen=True)
class GateResult:
    passed: bool
    failures: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "failures": list(self.failures)}


def check_gates(metrics: Mapping[str, float], gates: Sequence[GateSpec]) -> GateResult:
    """Each gate's metric must exist, be a number and lie within [min, max]."""
    failures = [problem for gate in gates if (problem := _check(metrics, gate))]
    return GateResult(passed=not failures, failures=tuple(failures))


def _check(metrics: Mapping[str, float], gate: GateSpec) -> str | None:
    if gate.metric not in metrics:
        return f"{gate.metric}: not measured (have {', '.join(sorted(metrics))})"
    value = metrics[gate.metric]
    if value is None or math.isnan(value):
        return f"{gate.metric}: is NaN"
    if gate.min is not None and value < gate.min:
        return f"{gate.metric} >= {gate.min}: got {value:.4g}"
    if gate.max is not None and value > gate.max:
        return f"{gate.metric} <= {gate.max}: got {value:.4g}"
    return None
