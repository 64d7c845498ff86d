"""Profiles: mergeable per-column statistics of a data version (Apache DataSketches), and drift
between two profiles computed from the stored sketches alone.

    >>> profile = DatasetProfile.from_batches(part.batch for part in iter_batches("data/"))
    ...                                                                 # doctest: +SKIP
    >>> compute_drift(reference, profile).summary()                     # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.profiles._column import ColumnProfile
    from trainforge.profiles._dataset import DatasetProfile, merge_all
    from trainforge.profiles._drift import ColumnDrift, DriftReport, compute_drift

_EXPORTS = {
    "ColumnDrift": "trainforge.profiles._drift",
    "ColumnProfile": "trainforge.profiles._column",
    "DatasetProfile": "trainforge.profiles._dataset",
    "DriftReport": "trainforge.profiles._drift",
    "compute_drift": "trainforge.profiles._drift",
    "merge_all": "trainforge.profiles._dataset",
}

__all__ = ["ColumnDrift", "ColumnProfile", "DatasetProfile", "DriftReport", "compute_drift",
           "merge_all"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
