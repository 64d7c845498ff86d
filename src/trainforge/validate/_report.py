"""The outcome of checking a frame against a schema contract."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Violation:
    """One broken rule on one column: how many rows break it and where the first ones are.

    `first_rows` holds up to 5 row locations; it is empty for column-level rules ("present",
    "unexpected column"), whose `count` is every row.
    """

    column: str
    rule: str
    expected: str
    count: int
    first_rows: tuple[str, ...]

    def describe(self) -> str:
        rows = "row" if self.count == 1 else "rows"
        where = f" (first: {', '.join(self.first_rows)})" if self.first_rows else ""
        return f"{self.column}: {self.rule}: {self.count} {rows}, expected {self.expected}{where}"


@dataclass(frozen=True)
class ValidationReport:
    """Every violation found in `rows_checked` rows; `passed` when there is none."""

    violations: tuple[Violation, ...]
    rows_checked: int

    @property
    def passed(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        """A header line, then one line per violation."""
        if self.passed:
            return f"schema contract: all rules hold on {self.rows_checked} rows"
        count = len(self.violations)
        noun = "violation" if count == 1 else "violations"
        header = f"schema contract: {count} {noun} in {self.rows_checked} rows"
        return "\n".join([header, *(f"  {v.describe()}" for v in self.violations)])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: passed, rows_checked and the violations (first_rows as lists)."""
        violations = [{**asdict(v), "first_rows": list(v.first_rows)} for v in self.violations]
        return {"passed": self.passed, "rows_checked": self.rows_checked, "violations": violations}
