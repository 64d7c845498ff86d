"""Validate: a schema contract (YAML), a pure check against it, and the stage that acts on it."""

from __future__ import annotations

from trainforge.validate._checks import check_contract
from trainforge.validate._contract import ColumnRule, SchemaContract, load_contract
from trainforge.validate._report import ValidationReport, Violation
from trainforge.validate._stage import ContractWarning, validate_frame

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
