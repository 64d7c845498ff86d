"""Dotted field paths of nested mappings (a spec, a run's params), without pydantic or YAML."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flatten_paths(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as `{"a.b.c": leaf}`, the paths overrides and messages use; an empty
    mapping is a leaf."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping) and value:
            flat.update(flatten_paths(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
