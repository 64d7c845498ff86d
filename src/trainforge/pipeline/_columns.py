"""Column and label names as a spec gives them, checked without reading data (no pandas): what
`check_spec` and the dataset code share."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from trainforge.config import YAML_BOOLEAN_WORDS

Label = bool | int | float | str


def same_label(value: object, label: Label) -> bool:
    """Whether a target value is the label a spec names (the module's matching rules)."""
    if isinstance(label, bool) and isinstance(value, str):
        return value.strip().lower() in YAML_BOOLEAN_WORDS[label]
    if isinstance(label, str) != isinstance(value, str):
        return str(value) == str(label)
    return bool(value == label)


def suggest_column(name: str, known: Sequence[str]) -> str:
    """A did-you-mean clause naming the known column closest to `name` (one differing only in
    case first), or nothing when none is close."""
    close = [c for c in known if c.lower() == name.lower()] or difflib.get_close_matches(
        name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def list_columns(known: Sequence[str], limit: int = 20) -> str:
    """The first `limit` column names, comma-separated, and how many more there are."""
    more = f", ... ({len(known) - limit} more)" if len(known) > limit else ""
    return ", ".join(known[:limit]) + more
