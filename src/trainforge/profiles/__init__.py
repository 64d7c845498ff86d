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
    from trainforge.profiles._stored import (
        load_profile,
        profile_ingested,
        profile_listing,
        profile_source,
    )

_EXPORTS = {
    "ColumnDrift": "trainforge.profiles._drift",
    "ColumnProfile": "trainforge.profiles._column",
    "DatasetProfile": "trainforge.profiles._dataset",
    "DriftReport": "trainforge.profiles._drift",
    "compute_drift": "trainforge.profiles._drift",
    "load_profile": "trainforge.profiles._stored",
    "merge_all": "trainforge.profiles._dataset",
    "profile_ingested": "trainforge.profiles._stored",
    "profile_listing": "trainforge.profiles._stored",
    "profile_source": "trainforge.profiles._stored",
}

__all__ = [
    "ColumnDrift",
    "ColumnProfile",
    "DatasetProfile",
    "DriftReport",
    "compute_drift",
    "load_profile",
    "merge_all",
    "profile_ingested",
    "profile_listing",
    "profile_source",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
