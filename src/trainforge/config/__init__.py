"""The pipeline spec (pydantic models), the YAML loading that validates it, and `Settings`.

Names are imported on first use (`trainforge._lazy`): `from trainforge.config import Settings`
builds no spec model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.config._credentials import Credentials
    from trainforge.config._loading import (
        YAML_BOOLEAN_WORDS,
        apply_overrides,
        apply_values,
        load_model,
        parse_model,
        read_yaml_mapping,
    )
    from trainforge.config._paths import flatten_paths
    from trainforge.config._pipeline import load_spec, recorded_spec
    from trainforge.config._redaction import redact_argument
    from trainforge.config._secrets import KEEP_CREDENTIALS
    from trainforge.config._settings import ARTIFACT_PROXY_PATH, Settings, mask_url_password
    from trainforge.config._spec import (
        CheckpointSpec,
        ClipSpec,
        DataSpec,
        EarlyStoppingSpec,
        EvaluationSpec,
        FeaturesSpec,
        GateSpec,
        ImputeSpec,
        MetricLimitSpec,
        MinMaxSpec,
        ModelSpec,
        ObjectiveSpec,
        OneHotSpec,
        OptimizerSpec,
        ParamSpec,
        PbtSpec,
        PipelineSpec,
        ProfilerSpec,
        PromotionSpec,
        PrunerSpec,
        RegistrySpec,
        ScheduleSpec,
        SplitSpec,
        StandardizeSpec,
        SubmitSpec,
        TrackingSpec,
        TrainingSpec,
        TransformSpec,
        TuningSpec,
    )

_EXPORTS = {
    "CheckpointSpec": "trainforge.config._spec",
    "Credentials": "trainforge.config._credentials",
    "ClipSpec": "trainforge.config._spec",
    "DataSpec": "trainforge.config._spec",
    "EarlyStoppingSpec": "trainforge.config._spec",
    "EvaluationSpec": "trainforge.config._spec",
    "FeaturesSpec": "trainforge.config._spec",
    "GateSpec": "trainforge.config._spec",
    "ObjectiveSpec": "trainforge.config._spec",
    "ParamSpec": "trainforge.config._spec",
    "PbtSpec": "trainforge.config._spec",
    "PrunerSpec": "trainforge.config._spec",
    "PromotionSpec": "trainforge.config._spec",
    "TuningSpec": "trainforge.config._spec",
    "ImputeSpec": "trainforge.config._spec",
    "KEEP_CREDENTIALS": "trainforge.config._secrets",
    "ARTIFACT_PROXY_PATH": "trainforge.config._settings",
    "MetricLimitSpec": "trainforge.config._spec",
    "MinMaxSpec": "trainforge.config._spec",
    "ModelSpec": "trainforge.config._spec",
    "OneHotSpec": "trainforge.config._spec",
    "OptimizerSpec": "trainforge.config._spec",
    "PipelineSpec": "trainforge.config._spec",
    "ProfilerSpec": "trainforge.config._spec",
    "RegistrySpec": "trainforge.config._spec",
    "ScheduleSpec": "trainforge.config._spec",
    "Settings": "trainforge.config._settings",
    "SplitSpec": "trainforge.config._spec",
    "StandardizeSpec": "trainforge.config._spec",
    "SubmitSpec": "trainforge.config._spec",
    "TrackingSpec": "trainforge.config._spec",
    "TrainingSpec": "trainforge.config._spec",
    "TransformSpec": "trainforge.config._spec",
    "YAML_BOOLEAN_WORDS": "trainforge.config._loading",
    "apply_overrides": "trainforge.config._loading",
    "apply_values": "trainforge.config._loading",
    "flatten_paths": "trainforge.config._paths",
    "load_model": "trainforge.config._loading",
    "load_spec": "trainforge.config._pipeline",
    "recorded_spec": "trainforge.config._pipeline",
    "mask_url_password": "trainforge.config._settings",
    "parse_model": "trainforge.config._loading",
    "read_yaml_mapping": "trainforge.config._loading",
    "redact_argument": "trainforge.config._redaction",
}

__all__ = [
    "ARTIFACT_PROXY_PATH",
    "CheckpointSpec",
    "Credentials",
    "ClipSpec",
    "DataSpec",
    "EarlyStoppingSpec",
    "EvaluationSpec",
    "FeaturesSpec",
    "GateSpec",
    "ObjectiveSpec",
    "ParamSpec",
    "PbtSpec",
    "PrunerSpec",
    "PromotionSpec",
    "TuningSpec",
    "ImputeSpec",
    "KEEP_CREDENTIALS",
    "MetricLimitSpec",
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
    "SubmitSpec",
    "TrackingSpec",
    "TrainingSpec",
    "TransformSpec",
    "YAML_BOOLEAN_WORDS",
    "apply_overrides",
    "apply_values",
    "flatten_paths",
    "load_model",
    "load_spec",
    "recorded_spec",
    "mask_url_password",
    "parse_model",
    "read_yaml_mapping",
    "redact_argument",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
