"""The pipeline's gate step: the threshold gates of `evaluation.gates` over a run's metrics,
decided as promotion decides them (`threshold_gates`), as one pass / fail with the failures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trainforge.config import GateSpec
from trainforge.registry._promotion import threshold_gates


@dataclass(frozen=True)
class GateResult:
    passed: bool
    failures: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "failures": list(self.failures)}


def check_gates(metrics: Mapping[str, float], gates: Sequence[GateSpec]) -> GateResult:
    """Each gate's metric must exist, be a number and lie within [min, max]."""
    failures = [o.message for o in threshold_gates(metrics, gates) if not o.passed]
    return GateResult(passed=not failures, failures=tuple(failures))
