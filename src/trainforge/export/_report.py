"""The export report (`export/report.json`) and the pure decision that accepts or rejects a
variant; the registry's export-parity gate reads the report.

Rules of `judge_variant`, in this order (the first that applies is the reason):
1. an fp32 variant whose scores differ from the torch model's by more than the parity
   tolerance (max absolute difference) is rejected;
2. an int8 variant whose task metric drops by more than the budget is rejected;
3. a reduced variant (int8) both slower (latency p50) and larger (bytes) than the fp32 ONNX
   variant it came from is rejected: it has nothing to offer. Equal figures are not worse.
   fp32 variants have no baseline here (their figures are recorded, parity decides): an ONNX
   file holds the graph besides the weights, and a latency taken on a shared machine is too
   noisy to reject an exact model on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

REPORT_ARTIFACT = "export/report.json"


@dataclass(frozen=True)
class VariantReport:
    """One exported variant and the figures it was judged on."""

    name: str
    artifact: str
    accepted: bool
    reason: str | None
    max_abs_diff: float
    metric_drop: float | None
    latency_ms_p50: float
    size_bytes: int
    exporter: str


@dataclass(frozen=True)
class ExportReport:
    """Every variant of one run's export, and how many held-out rows checked them."""

    variants: tuple[VariantReport, ...]
    rows: int
    metric: str

    def to_dict(self) -> dict[str, Any]:
        return {"variants": [asdict(v) for v in self.variants], "rows": self.rows,
                "metric": self.metric}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExportReport:
        variants = tuple(VariantReport(**item) for item in data["variants"])
        return cls(variants, int(data["rows"]), str(data.get("metric", "")))

    def accepted(self, name: str) -> VariantReport | None:
        """The variant `name` when it was accepted, else None."""
        found = [v for v in self.variants if v.name == name and v.accepted]
        return found[0] if found else None


def judge_variant(
    *,
    max_abs_diff: float,
    metric_drop: float | None,
    latency_ms: float,
    size_bytes: int,
    baseline: tuple[float, int] | None,
    parity_tolerance: float,
    metric_budget: float,
) -> str | None:
    """Why the variant is rejected, or None when it is accepted (see the module rules);
    `metric_drop` is None for fp32 variants, which are held to parity instead; `baseline` is
    the fp32 variant's (latency ms, bytes) for a reduced variant, else None."""
    if metric_drop is None and not max_abs_diff <= parity_tolerance:
        return f"parity: max abs diff {max_abs_diff:.3g} > {parity_tolerance:g}"
    if metric_drop is not None and not metric_drop <= metric_budget:
        return f"metric drop {metric_drop:.4g} > budget {metric_budget:g}"
    if baseline is not None and latency_ms > baseline[0] and size_bytes > baseline[1]:
        return (f"slower ({latency_ms:.3g} ms > {baseline[0]:.3g} ms) and larger "
                f"({size_bytes} > {baseline[1]} bytes) than fp32")
    return None
