"""Validate: a schema contract (YAML), a pure check against it, and the stage that acts on it.

Names are imported on first use (`trainforge._lazy`): `load_contract` (what `trainforge
validate` reads) comes without pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.validate._checks import check_contract
    from trainforge.validate._contract import ColumnRule, SchemaContract, load_contract
    from trainforge.validate._report import ValidationReport, Violation
    from trainforge.validate._stage import ContractWarning, validate_frame

_EXPORTS = {
    "ColumnRule": "trainforge.validate._contract",
    "ContractWarning": "trainforge.validate._stage",
    "SchemaContract": "trainforge.validate._contract",
    "ValidationReport": "trainforge.validate._report",
    "Violation": "trainforge.validate._report",
    "check_contract": "trainforge.validate._checks",
    "load_contract": "trainforge.validate._contract",
    "validate_frame": "trainforge.validate._stage",
}

__all__ = [
    "ColumnRule",
    "ContractWarning",
    "SchemaContract",
    "ValidationReport",
    "Violation",
    "check_contract",
    "load_contract",
    "validate_frame",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
