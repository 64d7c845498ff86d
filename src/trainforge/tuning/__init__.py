"""Hyperparameter tuning: population-based training over trainforge's checkpoints (`run_pbt`).

Names are imported on first use (`trainforge._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.tuning._pbt import (
        PbtListener,
        PbtMemberResult,
        PbtResult,
        read_lineage,
        run_pbt,
    )
    from trainforge.tuning._pbt_lineage import ExploitRecord, IntervalScores, Lineage
    from trainforge.tuning._pbt_member import PbtMember

_EXPORTS = {
    "ExploitRecord": "trainforge.tuning._pbt_lineage",
    "IntervalScores": "trainforge.tuning._pbt_lineage",
    "Lineage": "trainforge.tuning._pbt_lineage",
    "PbtListener": "trainforge.tuning._pbt",
    "PbtMember": "trainforge.tuning._pbt_member",
    "PbtMemberResult": "trainforge.tuning._pbt",
    "PbtResult": "trainforge.tuning._pbt",
    "read_lineage": "trainforge.tuning._pbt",
    "run_pbt": "trainforge.tuning._pbt",
}

__all__ = [
    "ExploitRecord",
    "IntervalScores",
    "Lineage",
    "PbtListener",
    "PbtMember",
    "PbtMemberResult",
    "PbtResult",
    "read_lineage",
    "run_pbt",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
