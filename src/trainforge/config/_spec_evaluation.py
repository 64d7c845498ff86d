"""The spec's `evaluation` and `registry` sections."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from trainforge.config._sections import _Section


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
    """How the evaluate step scores a trained model (`trainforge.evaluate`): the decision
    threshold of a binary task, slices, cross-validation, plots, and the absolute gates."""

    threshold: Annotated[float, Field(gt=0, lt=1)] | Literal["auto"] = Field(
        0.5, description="binary task: the decision threshold (a score >= it is positive), or "
        "auto: chosen on the validation split by threshold_by"
    )
    threshold_by: Literal["f1", "precision", "recall"] | None = Field(
        None, description="threshold auto: f1 (the default: the highest F1), or reach "
        "threshold_target precision / recall"
    )
    threshold_target: float | None = Field(
        None, gt=0, lt=1, description="threshold_by precision or recall: the value to reach"
    )
    slices: list[str] = Field(
        default_factory=list, description="data columns whose values (or quantile buckets) "
        "get their own test metrics and a largest gap"
    )
    slice_buckets: int = Field(
        4, ge=2, description="a numeric slice column with more distinct values is cut into "
        "this many quantile buckets"
    )
    slice_min_rows: PositiveInt = Field(
        30, description="slices with fewer test rows are reported but left out of the gaps"
    )
    cross_validation: int | None = Field(
        None, ge=2, description="k: k folds over the train and validation rows, each trained "
        "and scored; mean and spread recorded"
    )
    plots: bool = Field(True, description="ROC, PR, confusion, calibration, per-slice PNGs")
    gates: list[GateSpec] = Field(default_factory=list)

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, value: object) -> object:
        """One message for both forms (rather than one per member of the union)."""
        if value == "auto" or (isinstance(value, (int, float)) and not isinstance(value, bool)
                               and 0 < value < 1):
            return value
        raise ValueError(f"expected a number > 0 and < 1, or auto; got {value!r}")

    @model_validator(mode="after")
    def _check(self) -> EvaluationSpec:
        named = [name for name in ("threshold_by", "threshold_target")
                 if getattr(self, name) is not None]
        if self.threshold != "auto":
            if named:
                verb = "apply" if len(named) > 1 else "applies"
                raise ValueError(f"{' and '.join(named)} {verb} to threshold: auto only; "
                                 f"threshold is {self.threshold:g}")
        elif self.choose_by == "f1" and self.threshold_target is not None:
            raise ValueError("threshold_target applies to threshold_by precision or recall; "
                             "threshold_by is f1")
        elif self.choose_by != "f1" and self.threshold_target is None:
            raise ValueError(f"threshold_by {self.choose_by} needs threshold_target (the "
                             f"{self.choose_by} to reach, e.g. 0.9)")
        duplicated = sorted({c for c in self.slices if self.slices.count(c) > 1})
        if duplicated:
            raise ValueError(f"slices names {duplicated[0]!r} twice")
        return self

    @property
    def choose_by(self) -> str:
        """How `threshold: auto` chooses: `threshold_by`, f1 when not set."""
        return self.threshold_by or "f1"

    @property
    def fixed_threshold(self) -> float:
        """The threshold scores use before one is chosen: the spec's number, or 0.5 with
        `auto` (the trainer's per-epoch validation metrics use it)."""
        return 0.5 if self.threshold == "auto" else self.threshold


class MetricLimitSpec(_Section):
    """A limit on one metric: `max_drop` names a recorded test metric (`test_roc_auc`), how
    much worse than production the candidate may score on it; `max_slice_gap` names an
    evaluation metric (`roc_auc`), how far its best and worst slices may lie apart."""

    metric: str = Field(min_length=1)
    max: float = Field(ge=0)


class PromotionSpec(_Section):
    """The gates a promotion applies beyond `evaluation.gates` (thresholds, always applied):
    `max_drop` re-scores the production version on the candidate's test split and compares;
    `max_slice_gap` reads the candidate's `test_slice_gap_<metric>`; `export_parity` wants an
    accepted ONNX export (`trainforge export`). Production gets all of them, canary all but
    `max_drop`, staging the thresholds only."""

    max_drop: list[MetricLimitSpec] = Field(default_factory=list)
    max_slice_gap: list[MetricLimitSpec] = Field(default_factory=list)
    export_parity: bool = False


class RegistrySpec(_Section):
    model_name: str = Field(min_length=1)
    promotion: PromotionSpec = PromotionSpec()
