"""Validate: a schema contract (YAML), its check over Arrow batches or a frame, and the stage
that acts on it (error, warn, quarantine).

Names are imported on first use (`trainforge._lazy`): `load_contract` (what `trainforge
validate` reads) comes without pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.validate._checker import ContractChecker
    from trainforge.validate._checks import check_contract, frame_batches
    from trainforge.validate._contract import (
        ColumnRule,
        FreshnessRule,
        RowsRule,
        SchemaContract,
        load_contract,
    )
    from trainforge.validate._quarantine import QuarantineWriter
    from trainforge.validate._report import ValidationReport, Violation
    from trainforge.validate._stage import (
        ContractWarning,
        enforce,
        quarantine_frame,
        validate_frame,
    )

_EXPORTS = {
    "ColumnRule": "trainforge.validate._contract",
    "ContractChecker": "trainforge.validate._checker",
    "ContractWarning": "trainforge.validate._stage",
    "FreshnessRule": "trainforge.validate._contract",
    "QuarantineWriter": "trainforge.validate._quarantine",
    "RowsRule": "trainforge.validate._contract",
    "SchemaContract": "trainforge.validate._contract",
    "ValidationReport": "trainforge.validate._report",
    "Violation": "trainforge.validate._report",
    "check_contract": "trainforge.validate._checks",
    "enforce": "trainforge.validate._stage",
    "frame_batches": "trainforge.validate._checks",
    "load_contract": "trainforge.validate._contract",
    "quarantine_frame": "trainforge.validate._stage",
    "validate_frame": "trainforge.validate._stage",
}

__all__ = [
    "ColumnRule",
    "ContractChecker",
    "ContractWarning",
    "FreshnessRule",
    "QuarantineWriter",
    "RowsRule",
    "SchemaContract",
    "ValidationReport",
    "Violation",
    "check_contract",
    "enforce",
    "frame_batches",
    "load_contract",
    "quarantine_frame",
    "validate_frame",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
