"""The spec's `tuning` section."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from trainforge.config._sections import _Section


class ParamSpec(_Section):
    """One dimension of a search space: the values one spec path takes.

    `uniform` / `loguniform`: floats in [low, high] (`step` discretises uniform); `int`: integers
    in [low, high] by `step` (`log: true` samples on a log scale); `choice`: one of `values`.
    `grid` lists the values a grid search visits (a choice visits its `values`)."""

    type: Literal["uniform", "loguniform", "int", "choice"]
    low: float | None = None
    high: float | None = None
    step: PositiveFloat | None = None
    log: bool = False
    values: list[Any] | None = None
    grid: list[Any] | None = None

    @model_validator(mode="after")
    def _check(self) -> ParamSpec:
        if self.type == "choice":
            if not self.values:
                raise ValueError("a choice needs a non-empty list of values")
            return self
        if self.low is None or self.high is None:
            raise ValueError(f"a {self.type} parameter needs low and high")
        if self.low > self.high:
            raise ValueError(f"low ({self.low:g}) is above high ({self.high:g})")
        if (self.type == "loguniform" or self.log) and self.low <= 0:
            raise ValueError(f"a log scale needs low > 0 (got {self.low:g})")
        if self.type == "int" and (self.low != int(self.low) or self.high != int(self.high)):
            raise ValueError("an int parameter needs integer low and high")
        if self.step is not None and (self.type == "loguniform" or self.log):
            raise ValueError("step cannot be combined with a log scale")
        if self.grid is not None and not self.grid:
            raise ValueError("grid is empty")
        return self


class ObjectiveSpec(_Section):
    """The metric a study optimises: a validation metric the trainer logs each epoch (such as
    `val_loss`, `val_accuracy`) or a test metric of the evaluate step (`test_roc_auc`)."""

    metric: str = Field(min_length=1)
    direction: Literal["minimize", "maximize"]


class PrunerSpec(_Section):
    """Stops unpromising trials early on the intermediate values they report."""

    type: Literal["none", "median", "asha", "hyperband"] = "none"
    min_resource: PositiveInt = Field(1, description="asha, hyperband: reports before a cut")
    reduction_factor: int = Field(3, ge=2, description="asha, hyperband: 1/n go on at a rung")
    startup_trials: int = Field(5, ge=0, description="median: trials that are never pruned")
    warmup_reports: int = Field(0, ge=0, description="median: reports before pruning starts")


class PbtSpec(_Section):
    """Population-based training: `population` members train in intervals of `interval_steps`;
    after each interval the bottom `quantile` copy a top-`quantile` member's newest checkpoint
    (exploit) and perturb its hyperparameters by one of `perturb_factors` or, with
    `resample_probability`, draw them anew from the space (explore)."""

    population: int = Field(8, ge=2)
    interval_steps: PositiveInt = 100
    quantile: float = Field(0.25, gt=0, le=0.5)
    perturb_factors: tuple[PositiveFloat, PositiveFloat] = (0.8, 1.2)
    resample_probability: float = Field(0.25, ge=0, le=1)


class TuningSpec(_Section):
    """A hyperparameter study over spec paths (`trainforge tune SPEC`): each trial is the
    pipeline with the sampled values applied, tracked as a run under the study's run."""

    objective: ObjectiveSpec
    space: dict[str, ParamSpec] = Field(min_length=1, description="dotted spec path -> values")
    sampler: Literal["grid", "random", "tpe", "gp"] = "tpe"
    pruner: PrunerSpec = PrunerSpec()
    report_every_n_steps: PositiveInt | None = Field(
        None, description="report the objective every N steps too (default: each epoch)"
    )
    trials: PositiveInt | None = Field(20, description="trial budget; None: until the timeout")
    timeout_minutes: PositiveFloat | None = None
    seed: int = 0
    refit: bool = Field(False, description="evaluate, gate and register the best trial's model")
    pbt: PbtSpec | None = None

    @model_validator(mode="after")
    def _check(self) -> TuningSpec:
        if self.trials is None and self.timeout_minutes is None:
            raise ValueError("a study needs a budget: trials, timeout_minutes or both")
        return self
