"""The pipeline spec (pydantic models) and the YAML loading that validates it."""

from __future__ import annotations

from pathlib import Path

from trainforge.config._loading import (
    apply_overrides,
    flatten_paths,
    load_model,
    parse_model,
    read_yaml_mapping,
)
from trainforge.config._secrets import KEEP_CREDENTIALS, redact_argument
from trainforge.config._settings import Settings, mask_url_password
from trainforge.config._spec import (
    CheckpointSpec,
    ClipSpec,
    DataSpec,
    EarlyStoppingSpec,
    EvaluationSpec,
    FeaturesSpec,
    GateSpec,
    ImputeSpec,
    MinMaxSpec,
    ModelSpec,
    OneHotSpec,
    OptimizerSpec,
    PipelineSpec,
    ProfilerSpec,
    RegistrySpec,
    ScheduleSpec,
    SplitSpec,
    StandardizeSpec,
    TrackingSpec,
    TrainingSpec,
    TransformSpec,
)

__all__ = [
    "KEEP_CREDENTIALS",
    "CheckpointSpec",
    "ClipSpec",
    "DataSpec",
    "EarlyStoppingSpec",
    "EvaluationSpec",
    "FeaturesSpec",
    "GateSpec",
    "ImputeSpec",
    "MinMaxSpec",
    "ModelSpec",
    "OneHotSpec",
    "OptimizerSpec",
    "PipelineSpec",
    "ProfilerSpec",
    "RegistrySpec",
    "ScheduleSpec",
    "Settings",
    "SplitSpec",
    "StandardizeSpec",
    "TrackingSpec",
    "TrainingSpec",
    "TransformSpec",
    "apply_overrides",
    "flatten_paths",
    "load_model",
    "load_spec",
    "mask_url_password",
    "parse_model",
    "read_yaml_mapping",
    "redact_argument",
]


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
