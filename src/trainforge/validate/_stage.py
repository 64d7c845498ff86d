"""The validate stage: check a frame, then stop the pipeline, warn, or set the offending rows
aside, as the spec's `on_fail` says."""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import pandas as pd

from trainforge.errors import DataValidationError
from trainforge.validate._checker import Locate
from trainforge.validate._checks import check_frame
from trainforge.validate._contract import SchemaContract
from trainforge.validate._report import ValidationReport

OnFail = Literal["error", "warn", "quarantine"]


class ContractWarning(UserWarning):
    """Rows break the schema contract, and the spec said `on_fail: warn`."""


def validate_frame(
    frame: pd.DataFrame,
    contract: SchemaContract,
    on_fail: OnFail,
    locate: Locate | None = None,
    source: str = "",
    *,
    contract_file: str = "",
) -> ValidationReport:
    """Check `frame`; on a violation raise DataValidationError ("error") or warn ("warn" and
    "quarantine": `quarantine_frame` says which rows to set aside).

    `source` (the data file or glob the rows came from) starts the message, so a user knows
    which file to open; `contract_file` names the rules broken. The report travels on the
    error as `.report`.
    """
    report, _ = quarantine_frame(frame, contract, on_fail, locate, source,
                                 contract_file=contract_file)
    return report


def quarantine_frame(
    frame: pd.DataFrame,
    contract: SchemaContract,
    on_fail: OnFail,
    locate: Locate | None = None,
    source: str = "",
    *,
    contract_file: str = "",
) -> tuple[ValidationReport, np.ndarray]:
    """`validate_frame`, also returning the mask of rows that break a row rule (type, not
    null, bounds, allowed, regex, unique): the rows `on_fail: quarantine` sets aside."""
    report, broken = check_frame(frame, contract, locate)
    enforce(report, on_fail, source, contract_file=contract_file, set_aside=int(broken.sum()))
    return report, broken


def enforce(report: ValidationReport, on_fail: OnFail, source: str = "", *,
            contract_file: str = "", set_aside: int = 0) -> None:
    """Nothing for a passed report; else DataValidationError ("error") or a ContractWarning
    ("warn"; "quarantine" also says how many rows, `set_aside`, were set aside)."""
    if report.passed:
        return
    rules = f" in {contract_file}" if contract_file else ""
    message = f"{source or 'data'}: rows break the schema contract{rules}\n{report.summary()}"
    if on_fail == "error":
        raise DataValidationError(message, report)
    if on_fail == "quarantine":
        message += f"\n{set_aside} row(s) set aside (on_fail: quarantine)"
    warnings.warn(message, ContractWarning, stacklevel=4)
