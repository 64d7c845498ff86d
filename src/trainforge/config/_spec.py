"""The pipeline spec: one pydantic model per section, mirroring the objects each section builds.

Unknown keys are errors (`extra="forbid"`); required fields have no default.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SplitSpec(_Section):
    """How rows are divided into train / validation / test."""

    method: Literal["random", "time"] = "random"
    seed: int = 0
    val_fraction: float = Field(0.15, gt=0, lt=1)
    test_fraction: float = Field(0.15, gt=0, lt=1)
    time_column: str | None = None

    @model_validator(mode="after")
    def _check(self) -> SplitSpec:
        if self.val_fraction + self.test_fraction >= 1:
            raise ValueError("val_fraction + test_fraction must leave rows for training (< 1)")
        if self.method == "time" and not self.time_column:
            raise ValueError("method 'time' needs time_column")
        return self


class DataSpec(_Section):
    """Where the rows come from, what they must look like and how they are split."""

    source: str = Field(description="file path or glob, relative to the spec file")
    format: Literal["auto", "parquet", "csv"] = "auto"
    target: str
    contract: str | None = Field(None, description="schema contract YAML, relative to the spec")
    on_fail: Literal["error", "warn"] = "error"
    split: SplitSpec = SplitSpec()


class StandardizeSpec(_Section):
    type: Literal["standardize"]
    columns: list[str] = Field(min_length=1)


class MinMaxSpec(_Section):
    type: Literal["min_max"]
    columns: list[str] = Field(min_length=1)


class OneHotSpec(_Section):
    type: Literal["one_hot"]
    columns: list[str] = Field(min_length=1)
    max_categories: PositiveInt = 20
    min_frequency: int = Field(1, ge=1)


class ImputeSpec(_Section):
    type: Literal["impute"]
    columns: list[str] = Field(min_length=1)
    strategy: Literal["mean", "median", "most_frequent", "constant"] = "median"
    fill_value: float | str | None = None


TransformSpec = Annotated[
    Union[StandardizeSpec, MinMaxSpec, OneHotSpec, ImputeSpec], Field(discriminator="type")
]


class FeaturesSpec(_Section):
    """Transforms applied in order; each is fitted on the training split only."""

    transforms: list[TransformSpec] = Field(min_length=1)
    passthrough: list[str] = Field(default_factory=list, description="numeric columns used as-is")


class ModelSpec(_Section):
    type: str = Field("mlp", description="built-in name (mlp) or 'package.module:build_fn'")
    task: Literal["binary", "multiclass", "regression"]
    hidden: list[PositiveInt] = Field(default_factory=lambda: [64, 32])
    dropout: float = Field(0.0, ge=0, lt=1)
    kwargs: dict[str, object] = Field(default_factory=dict)


class OptimizerSpec(_Section):
    name: Literal["adamw"] = "adamw"
    lr: PositiveFloat = 1e-3
    weight_decay: float = Field(0.0, ge=0)


class TrainingSpec(_Section):
    epochs: PositiveInt = 5
    batch_size: PositiveInt = 256
    optimizer: OptimizerSpec = OptimizerSpec()
    seed: int = 0
    device: Literal["auto", "cpu", "cuda"] = "auto"
    pos_weight: PositiveFloat | None = Field(None, description="binary task: weight of positives")
    log_every_n_steps: PositiveInt = 50


class GateSpec(_Section):
    """A threshold on one evaluation metric; at least one of min / max."""

    metric: str
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _check(self) -> GateSpec:
        if self.min is None and self.max is None:
            raise ValueError("a gate needs min, max or both")
        return self


class EvaluationSpec(_Section):
    threshold: float = Field(0.5, gt=0, lt=1, description="binary task: decision threshold")
    gates: list[GateSpec] = Field(default_factory=list)


class RegistrySpec(_Section):
    model_name: str = Field(min_length=1)


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

    @property
    def experiment_name(self) -> str:
        return self.experiment or self.name
