"""Reproduce any run from its record alone: its commit checked out with its recorded changes,
its pinned data version, its resolved spec, run again as a new run (`system.reproduces`) and
compared with it series by series.

    >>> done = reproduce_run(run_id, session)  # doctest: +SKIP
    >>> done.comparison.identical  # doctest: +SKIP
    True

What a run records for this: `tracking._code` (code) and the ingest step's snapshot (data).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.reproduce._compare import Comparison, Difference, compare
    from trainforge.reproduce._record import (
        ReproductionPlan,
        package_differences,
        plan_reproduction,
    )
    from trainforge.reproduce._reproduce import Reproduction, reproduce_run

_EXPORTS = {
    "Comparison": "trainforge.reproduce._compare",
    "Difference": "trainforge.reproduce._compare",
    "compare": "trainforge.reproduce._compare",
    "Reproduction": "trainforge.reproduce._reproduce",
    "ReproductionPlan": "trainforge.reproduce._record",
    "package_differences": "trainforge.reproduce._record",
    "plan_reproduction": "trainforge.reproduce._record",
    "reproduce_run": "trainforge.reproduce._reproduce",
}

__all__ = ["Comparison", "Difference", "Reproduction", "ReproductionPlan",
           "compare", "package_differences", "plan_reproduction", "reproduce_run"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
