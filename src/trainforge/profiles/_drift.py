"""`compute_drift`: how far a data profile has moved from a reference profile, from the stored
sketches alone (no data is read). A pure function.

Rules:
- Numeric columns: the reference's deciles cut both sides into 10 bins (shares from each KLL
  sketch's CDF): PSI = sum (c - r) ln(c / r) and the Jensen-Shannon distance (base 2) over
  those bins, shares floored at 1e-4; KS = the largest CDF gap over both sides' percentiles;
  Wasserstein = the mean gap between the quantile functions over 99 percentiles, divided by the
  reference's standard deviation (so 1.0 is a shift of one std). Each statistic's inputs come
  from sketches whose ranks are off by at most `rank_error` (normalized, each side), stated
  per column as `rank_error_bound` (the sum of both sides': the KS statistic's bound).
- Categorical columns: shares of the reference's and current's frequent items (the union of
  each side's top 50) plus one bucket for the rest: Jensen-Shannon distance and chi-square as
  Cohen's w = sqrt(sum (c - r)^2 / r), which does not grow with the row count.
- A column drifts when a statistic passes its threshold: a column's own (`thresholds[name]`),
  else `thresholds["*"]`, else the defaults (`default_thresholds`), which report at least
  what Evidently's defaults report: a numeric column drifts at PSI > 0.2 or, when both sides
  hold more than 1,000 values, at a Wasserstein distance above 0.1 reference standard
  deviations (a 0.25-sd shift of the mean, a 1.5x change of the variance; PSI alone misses
  both), with fewer values when its KS statistic passes the two-sample test's critical value
  at the 5% level; a categorical column drifts at a Jensen-Shannon distance above 0.1. A new
  sample of the same data stays below all of them. Schema drift (columns added, removed, or
  of another type) is reported apart and makes the report drifted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainforge.errors import DataError
from trainforge.profiles._column import ColumnProfile
from trainforge.profiles._dataset import DatasetProfile

STATISTICS = ("psi", "ks", "js", "wasserstein", "chi2")
LARGE_SAMPLE = 1_000  # values on each side above which a numeric column's default is Wasserstein
KS_CRITICAL_5 = 1.358  # c(0.05) of the two-sample KS test: D > c * sqrt((n + m) / (n m))
_FLOOR = 1e-4
_TOP = 50


@dataclass(frozen=True)
class ColumnDrift:
    column: str
    kind: str
    statistics: dict[str, float]
    thresholds: dict[str, float]
    rank_error_bound: float | None

    @property
    def drifted(self) -> bool:
        return any(self.statistics.get(name, 0.0) > limit
                   for name, limit in self.thresholds.items())


@dataclass(frozen=True)
class DriftReport:
    columns: tuple[ColumnDrift, ...]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    retyped: tuple[tuple[str, str, str], ...] = ()
    reference_rows: int = 0
    current_rows: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def drifted(self) -> bool:
        return bool(self.added or self.removed or self.retyped
                    or any(c.drifted for c in self.columns))

    @property
    def drifted_columns(self) -> list[str]:
        return [c.column for c in self.columns if c.drifted]

    def summary(self) -> str:
        if not self.drifted:
            return (f"no drift: {len(self.columns)} column(s) within their thresholds "
                    f"({self.current_rows} rows against {self.reference_rows})")
        lines = [f"drift in {len(self.drifted_columns)} of {len(self.columns)} column(s)"]
        for column in self.columns:
            if column.drifted:
                over = ", ".join(f"{name} {column.statistics[name]:.3f} > {limit:g}"
                                 for name, limit in column.thresholds.items()
                                 if column.statistics.get(name, 0.0) > limit)
                lines.append(f"  {column.column}: {over}")
        lines += [f"  schema: column {name!r} added" for name in self.added]
        lines += [f"  schema: column {name!r} removed" for name in self.removed]
        lines += [f"  schema: column {name!r} was {old}, now {new}"
                  for name, old, new in self.retyped]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "drifted": self.drifted, "reference_rows": self.reference_rows,
            "current_rows": self.current_rows, **self.meta,
            "schema": {"added": list(self.added), "removed": list(self.removed),
                       "retyped": [{"column": c, "was": a, "now": b}
                                   for c, a, b in self.retyped]},
            "columns": [{"column": c.column, "kind": c.kind, "drifted": c.drifted,
                         "statistics": c.statistics, "thresholds": c.thresholds,
                         "rank_error_bound": c.rank_error_bound} for c in self.columns],
        }


def check_thresholds(thresholds: Mapping[str, Mapping[str, float]],
                     columns: list[str]) -> None:
    """DataError naming a threshold for a column the data does not have, or an unknown
    statistic."""
    for name, limits in thresholds.items():
        if name != "*" and name not in columns:
            raise DataError(f"drift.thresholds.{name}: no column {name!r} in the data "
                            f"(columns: {', '.join(columns)})")
        unknown = sorted(set(limits) - set(STATISTICS))
        if unknown:
            raise DataError(f"drift.thresholds.{name}.{unknown[0]}: unknown statistic; "
                            f"expected one of {', '.join(STATISTICS)}")


def compute_drift(reference: DatasetProfile, current: DatasetProfile,
                  thresholds: Mapping[str, Mapping[str, float]] | None = None) -> DriftReport:
    thresholds = thresholds or {}
    check_thresholds(thresholds, list(current.columns))
    shared = [name for name in current.columns if name in reference.columns]
    retyped = tuple((name, reference.columns[name].arrow_type, current.columns[name].arrow_type)
                    for name in shared
                    if reference.columns[name].kind != current.columns[name].kind)
    drifts = []
    for name in shared:
        ref, cur = reference.columns[name], current.columns[name]
        if ref.kind != cur.kind or ref.kind == "other" or not ref.values or not cur.values:
            continue
        statistics, bound = (_numeric(ref, cur) if ref.kind == "numeric"
                             else (_categorical(ref, cur), None))
        limits = dict(thresholds.get(name) or thresholds.get("*")
                      or default_thresholds(ref.kind, ref.values, cur.values))
        drifts.append(ColumnDrift(name, ref.kind, statistics, limits, bound))
    return DriftReport(
        tuple(drifts),
        added=tuple(n for n in current.columns if n not in reference.columns),
        removed=tuple(n for n in reference.columns if n not in current.columns),
        retyped=retyped, reference_rows=reference.rows, current_rows=current.rows,
    )


def default_thresholds(kind: str, reference_values: int,
                       current_values: int) -> dict[str, float]:
    """The thresholds of a column no threshold is given for (see the module's rules)."""
    if kind == "categorical":
        return {"js": 0.1}
    n, m = reference_values, current_values
    if min(n, m) > LARGE_SAMPLE:
        return {"psi": 0.2, "wasserstein": 0.1}
    return {"psi": 0.2, "ks": round(KS_CRITICAL_5 * math.sqrt((n + m) / (n * m)), 6)}


def _numeric(ref: ColumnProfile, cur: ColumnProfile) -> tuple[dict[str, float], float]:
    edges = sorted(set(ref.quantiles.get_quantiles([i / 10 for i in range(1, 10)])))
    ref_shares = _shares(ref, edges)
    cur_shares = _shares(cur, edges)
    levels = [i / 100 for i in range(1, 100)]
    points = sorted({*ref.quantiles.get_quantiles(levels), *cur.quantiles.get_quantiles(levels)})
    ks = max(abs(a - b) for a, b in zip(ref.quantiles.get_cdf(points),
                                        cur.quantiles.get_cdf(points), strict=True))
    gap = np.abs(np.array(ref.quantiles.get_quantiles(levels))
                 - np.array(cur.quantiles.get_quantiles(levels))).mean()
    scale = ref.std or 1.0
    statistics = {"psi": _psi(ref_shares, cur_shares), "js": _js(ref_shares, cur_shares),
                  "ks": float(ks), "wasserstein": float(gap / scale)}
    bound = (ref.rank_error or 0.0) + (cur.rank_error or 0.0)
    return statistics, bound


def _categorical(ref: ColumnProfile, cur: ColumnProfile) -> dict[str, float]:
    items = list(dict.fromkeys([v for v, _ in ref.top(_TOP)] + [v for v, _ in cur.top(_TOP)]))
    ref_shares = _item_shares(ref, items)
    cur_shares = _item_shares(cur, items)
    w = math.sqrt(sum((c - r) ** 2 / r for r, c in
                      zip(_floor(ref_shares), cur_shares, strict=True)))
    return {"js": _js(ref_shares, cur_shares), "chi2": w}


def _shares(profile: ColumnProfile, edges: list[float]) -> np.ndarray:
    cdf = [0.0, *profile.quantiles.get_cdf(edges)[:-1], 1.0]
    return np.diff(np.array(cdf))


def _item_shares(profile: ColumnProfile, items: list[str]) -> np.ndarray:
    counts = dict(profile.top(len(items) + _TOP))
    total = max(profile.values, 1)
    shares = [counts.get(item, 0) / total for item in items]
    return np.array([*shares, max(0.0, 1.0 - sum(shares))])


def _floor(shares: np.ndarray) -> np.ndarray:
    floored = np.maximum(shares, _FLOOR)
    return floored / floored.sum()


def _psi(ref: np.ndarray, cur: np.ndarray) -> float:
    r, c = _floor(ref), _floor(cur)
    return float(((c - r) * np.log(c / r)).sum())


def _js(ref: np.ndarray, cur: np.ndarray) -> float:
    r, c = _floor(ref), _floor(cur)
    m = (r + c) / 2
    divergence = 0.5 * (r * np.log2(r / m)).sum() + 0.5 * (c * np.log2(c / m)).sum()
    return float(math.sqrt(max(divergence, 0.0)))
