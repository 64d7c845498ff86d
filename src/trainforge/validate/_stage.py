"""The validate stage: check a frame, then stop the pipeline or warn as the spec says."""

from __future__ import annotations

import warnings
from typing import Literal

import pandas as pd

from trainforge.errors import DataValidationError
from trainforge.validate._checks import Locate, check_contract
from trainforge.validate._contract import SchemaContract
from trainforge.validate._report import ValidationReport


class ContractWarning(UserWarning):
    """Rows break the schema contract, and the spec said `on_fail: warn`."""


def validate_frame(
    frame: pd.DataFrame,
    contract: SchemaContract,
    on_fail: Literal["error", "warn"],
    locate: Locate | None = None,
    source: str = "",
    *,
    contract_file: str = "",
) -> ValidationReport:
    """Check `frame`; on a violation raise DataValidationError ("error") or warn ("warn").

    `source` (the data file or glob the rows came from) starts the message, so a user knows
    which file to open; `contract_file` names the rules broken. The report travels on the
    error as `.report`.
    """
    report = check_contract(frame, contract, locate)
    if report.passed:
        return report
    rules = f" in {contract_file}" if contract_file else ""
    message = f"{source or 'data'}: rows break the schema contract{rules}\n{report.summary()}"
    if on_fail == "error":
        raise DataValidationError(message, report)
    warnings.warn(message, ContractWarning, stacklevel=2)
    return report
