"""The pipeline spec: one pydantic model per section, mirroring the objects each section builds
(`_spec_data`, `_spec_training`, `_spec_evaluation`, `_spec_tuning`), and its root.

Unknown keys are errors (`extra="forbid"`); required fields have no default.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from trainforge.config._credentials import Credentials
from trainforge.config._sections import _Section
from trainforge.config._spec_data import (
    DataSpec,
    DriftSpec,
    FeaturesSpec,
    ImputeSpec,
    MinMaxSpec,
    OneHotSpec,
    SplitSpec,
    StandardizeSpec,
    TransformSpec,
)
from trainforge.config._spec_evaluation import (
    EvaluationSpec,
    GateSpec,
    MetricLimitSpec,
    PromotionSpec,
    RegistrySpec,
)
from trainforge.config._spec_training import (
    CheckpointSpec,
    ClipSpec,
    EarlyStoppingSpec,
    ModelSpec,
    OptimizerSpec,
    ProfilerSpec,
    ScheduleSpec,
    TrainingSpec,
)
from trainforge.config._spec_tuning import ObjectiveSpec, ParamSpec, PbtSpec, PrunerSpec, TuningSpec

__all__ = [
    "CheckpointSpec",
    "ClipSpec",
    "DataSpec",
    "DriftSpec",
    "EarlyStoppingSpec",
    "EvaluationSpec",
    "FeaturesSpec",
    "GateSpec",
    "ImputeSpec",
    "MetricLimitSpec",
    "MinMaxSpec",
    "ModelSpec",
    "ObjectiveSpec",
    "OneHotSpec",
    "OptimizerSpec",
    "ParamSpec",
    "PbtSpec",
    "PipelineSpec",
    "ProfilerSpec",
    "PromotionSpec",
    "PrunerSpec",
    "RegistrySpec",
    "ScheduleSpec",
    "SplitSpec",
    "StandardizeSpec",
    "SubmitSpec",
    "TrackingSpec",
    "TrainingSpec",
    "TransformSpec",
    "TuningSpec",
]


class TrackingSpec(_Section):
    """Where a run's metrics go besides the tracking database."""

    tensorboard: bool = Field(
        False, description="also write TensorBoard files to <TRAINFORGE_HOME>/tensorboard/<run>"
    )


class SubmitSpec(_Section):
    """How the `config` of a submitted run (the body of `POST /api/v1/pipelines/runs`, or
    `trainforge pipelines resolve`) maps onto this spec, once it is registered: `data_source`
    and `model_type` set the spec paths named here, and each name of `hyperparams` the path
    it maps to. A submission may set nothing else."""

    data_source: str = Field("data.source", description="the spec path `config.data_source` "
                             "sets")
    model_type: str = Field("model.type", description="the spec path `config.model_type` sets")
    hyperparams: dict[str, str] = Field(
        default_factory=dict, description="each name `config.hyperparams` may set, and the "
        "spec path it sets (lr: training.optimizer.lr)")

    def paths(self) -> dict[str, str]:
        """Each key of a config this maps, dotted (`hyperparams.lr`), and the path it sets."""
        return {"data_source": self.data_source, "model_type": self.model_type,
                **{f"hyperparams.{name}": path for name, path in self.hyperparams.items()}}


class PipelineSpec(_Section):
    """A whole pipeline: the root of a `pipeline.yaml`."""

    name: str = Field(min_length=1)
    experiment: str | None = Field(None, description="defaults to the pipeline name")
    data: DataSpec
    features: FeaturesSpec
    model: ModelSpec
    training: TrainingSpec = TrainingSpec()
    evaluation: EvaluationSpec = EvaluationSpec()
    registry: RegistrySpec | None = None
    tracking: TrackingSpec = TrackingSpec()
    tuning: TuningSpec | None = None
    submit: SubmitSpec = SubmitSpec()
    steps: list[dict[str, Any]] = Field(
        default_factory=list,
        description="your steps beside the standard chain, each with name, uses "
        "('package.module:function'), inputs (the chain's values: read, raw, splits, dataset, "
        "feature_pipeline, trained, evaluation, gate, model_version, or other steps' outputs), "
        "outputs, params, after (steps it follows), retries, timeout, cache")

    @model_validator(mode="after")
    def _streaming_has_no_folds(self) -> PipelineSpec:
        if self.data.streaming and self.evaluation.cross_validation:
            raise ValueError("evaluation.cross_validation refits on rows in memory; it is not "
                             "available with data.streaming: true")
        return self

    @model_validator(mode="after")
    def _submissions_set_fields_it_has(self) -> PipelineSpec:
        dumped = self.model_dump()
        missing = [f"submit.{key}: {path!r} is no field of this spec"
                   for key, path in self.submit.paths().items()
                   if not _holds_path(dumped, path.split("."))]
        if missing:
            raise ValueError("; ".join(missing))
        return self

    @property
    def experiment_name(self) -> str:
        return self.experiment or self.name

    def credentials(self) -> Credentials:
        """The storage options this spec gives, by location: `data.storage_options` for
        `data.source`, `training.checkpoint.storage_options` for its `location` (none where
        it gives none, so those of a credentials file still apply)."""
        given = {}
        if self.data.storage_options:
            given[self.data.source] = self.data.fsspec_options()
        checkpoint = self.training.checkpoint
        if checkpoint.location and checkpoint.storage_options:
            given[checkpoint.location] = checkpoint.fsspec_options()
        return Credentials(given)


def _holds_path(node: Any, parts: list[str]) -> bool:
    """Whether the dumped spec `node` has a field (or list item) at `parts`."""
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True
