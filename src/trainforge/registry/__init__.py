"""Model registry: versions with lineage, stages and the moves between them, promotion gates
(thresholds, a maximum drop against the re-scored production version, slice gaps, export
parity), the stage history, aliases, and diffs of two versions.

    >>> promote(store, artifacts, "fraud_detector", "3", "production",
    ...         reason="beats v2 on the March data", user="ann")          # doctest: +SKIP

`check_gates` is the pipeline's gate step (thresholds over a run's metrics);
`register_version` registers a model trained anywhere, under a label (`3.1`). Names are
imported on first use (`trainforge._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.registry._api import (
        Promotion,
        parse_reference,
        promote,
        resolve_version,
        rollback,
        set_alias,
    )
    from trainforge.registry._gates import GateResult, check_gates
    from trainforge.registry._lineage import diff, environment_summary, history, lineage
    from trainforge.registry._promotion import GATES_BY_STAGE, GateOutcome
    from trainforge.registry._register import check_label, register_version
    from trainforge.registry._stages import ALLOWED_MOVES, check_move

_EXPORTS = {
    "ALLOWED_MOVES": "trainforge.registry._stages",
    "GATES_BY_STAGE": "trainforge.registry._promotion",
    "GateOutcome": "trainforge.registry._promotion",
    "GateResult": "trainforge.registry._gates",
    "Promotion": "trainforge.registry._api",
    "check_gates": "trainforge.registry._gates",
    "check_label": "trainforge.registry._register",
    "check_move": "trainforge.registry._stages",
    "diff": "trainforge.registry._lineage",
    "environment_summary": "trainforge.registry._lineage",
    "history": "trainforge.registry._lineage",
    "lineage": "trainforge.registry._lineage",
    "parse_reference": "trainforge.registry._api",
    "promote": "trainforge.registry._api",
    "register_version": "trainforge.registry._register",
    "resolve_version": "trainforge.registry._api",
    "rollback": "trainforge.registry._api",
    "set_alias": "trainforge.registry._api",
}

__all__ = [
    "ALLOWED_MOVES",
    "GATES_BY_STAGE",
    "GateOutcome",
    "GateResult",
    "Promotion",
    "check_gates",
    "check_label",
    "check_move",
    "diff",
    "environment_summary",
    "history",
    "lineage",
    "parse_reference",
    "promote",
    "register_version",
    "resolve_version",
    "rollback",
    "set_alias",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
