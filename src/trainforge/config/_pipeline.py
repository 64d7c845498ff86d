"""`load_spec`: a pipeline spec file read, validated and made independent of the working
directory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from trainforge.config._loading import load_model
from trainforge.config._spec import PipelineSpec


def load_spec(path: str | Path, overrides: list[str] | None = None) -> PipelineSpec:
    """Load a pipeline spec; `data.source` and `data.contract` become absolute paths.

    Relative paths in a spec are relative to the spec file, so a pipeline runs the same from any
    working directory.
    """
    path = Path(path)
    spec = load_model(PipelineSpec, path, overrides)
    base = path.resolve().parent
    data = spec.data
    updates = {"source": _absolute(base, data.source)}
    if data.contract:
        updates["contract"] = _absolute(base, data.contract)
    return spec.model_copy(update={"data": data.model_copy(update=updates)})


def _absolute(base: Path, value: str) -> str:
    if "://" in value or Path(value).is_absolute():
        return value
    return str(base / value)


def recorded_spec(params: Mapping[str, Any]) -> PipelineSpec | None:
    """A run's recorded spec (its params) as today's schema reads it, so fields added since it
    was recorded take their defaults instead of counting as changes; None when the params no
    longer validate."""
    try:
        return PipelineSpec.model_validate(dict(params))
    except ValidationError:
        return None
