"""The pipeline spec: one pydantic model per section, mirroring the objects each section builds.

Unknown keys are errors (`extra="forbid"`); required fields have no default.
"""

from __future__ import annotations

import signal
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    SerializationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from trainforge.config._loading import YAML_BOOLEAN_WORDS
from trainforge.config._secrets import KEEP_CREDENTIALS, hide_secrets, revealed, without_secrets


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _booleans_as_words(cls, data: Any) -> Any:
        """A boolean given to a choice field that has a word YAML reads as that boolean
        (`off`, `on`, `yes`, `no`) means that word."""
        if not isinstance(data, dict):
            return data
        fixed = dict(data)
        for name, value in data.items():
            field = cls.model_fields.get(name)
            if isinstance(value, bool) and field is not None:
                words = [choice for choice in _choices(field.annotation)
                         if choice.lower() in YAML_BOOLEAN_WORDS[value]]
                if len(words) == 1:
                    fixed[name] = words[0]
        return fixed


def _choices(annotation: Any) -> list[str]:
    """The string values of a `Literal[...]` annotation (also inside `X | None`)."""
    if get_origin(annotation) is Literal:
        return [arg for arg in get_args(annotation) if isinstance(arg, str)]
    return [choice for arg in get_args(annotation) for choice in _choices(arg)]


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


class DriftSpec(_Section):
    """Compare each run's data profile with a reference profile (`trainforge.profiles`)."""

    reference: str | None = Field(
        None, description="data version (id, prefix, NAME or NAME@TAG) whose stored profile "
        "is the reference; None: that of the production version of `model`"
    )
    model: str | None = Field(
        None, description="registered model whose production version's data is the reference "
        "(default: registry.model_name)"
    )
    on_drift: Literal["warn", "fail"] = "warn"
    thresholds: dict[str, dict[str, PositiveFloat]] = Field(
        default_factory=dict, description="per column (or '*' for every column): statistic "
        "(psi, ks, js, wasserstein, chi2) -> the value above which the column drifted"
    )


class _FsspecOptions(_Section):
    """A section naming a location through fsspec: its `storage_options`, whose credential-like
    keys are hidden (`SecretStr`), left out of every dump and revealed only for fsspec."""

    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options (client_kwargs.endpoint_url, ...); "
        "credentials are better left to the environment, and are never recorded"
    )

    @field_validator("storage_options")
    @classmethod
    def _hide_credentials(cls, options: dict[str, Any]) -> dict[str, Any]:
        return hide_secrets(options)

    @field_serializer("storage_options")
    def _drop_credentials(
        self, options: dict[str, Any], info: SerializationInfo
    ) -> dict[str, Any]:
        if (info.context or {}).get(KEEP_CREDENTIALS):
            return revealed(options)
        return without_secrets(options)

    def fsspec_options(self) -> dict[str, Any]:
        """`storage_options` with the real credential values, for fsspec (never record it)."""
        return revealed(self.storage_options)


class DataSpec(_FsspecOptions):
    """Where the rows come from, what they must look like and how they are split.

    `positive_label` names the target value that is the positive class of a binary task (the
    other value is the negative class); a target holding 0/1 or true/false needs none, any
    other two values do.
    """

    source: str = Field(
        description="file, folder or glob, relative to the spec file, or a URL (file://, "
        "s3://bucket/prefix/*.parquet); `key=value` folders become columns"
    )
    format: Literal["auto", "parquet", "csv", "jsonl"] = Field(
        "auto", description="auto: by extension (.parquet/.pq, .csv, .jsonl/.ndjson, each "
        "optionally .gz/.zst/.bz2)"
    )
    version: str | None = Field(
        None, description="a snapshotted data version to read instead of the source's files "
        "as they are now: an id, a unique id prefix, NAME or NAME@TAG (`trainforge data list`)"
    )
    target: str
    positive_label: bool | int | float | str | None = Field(
        None, description="binary task: the target value that is the positive class"
    )
    contract: str | None = Field(None, description="schema contract YAML, relative to the spec")
    on_fail: Literal["error", "warn", "quarantine"] = Field(
        "error", description="rows breaking the contract: error stops the run, warn goes on, "
        "quarantine writes them to an artifact and goes on with the rest"
    )
    profile: bool = Field(True, description="profile the data read and store the profile "
                          "beside its data version")
    drift: DriftSpec | None = None
    split: SplitSpec = SplitSpec()
    streaming: bool = Field(
        False, description="train on Parquet row groups streamed from the source, never all "
        "in memory: the split decided row by row, the features fitted in passes, batches "
        "shuffled in windows of shuffle_rows rows (validation and test rows are held in memory)"
    )
    shuffle_rows: PositiveInt = Field(
        65_536, description="data.streaming: rows shuffled together (at least; whole row "
        "groups are read)"
    )

    @model_validator(mode="after")
    def _drift_needs_profile(self) -> DataSpec:
        if self.drift is not None and not self.profile:
            raise ValueError("drift compares profiles: it needs profile: true")
        if self.streaming and self.on_fail == "quarantine":
            raise ValueError("on_fail: quarantine is not available with streaming: true "
                             "(use error or warn)")
        return self

    @property
    def reserved_columns(self) -> list[str]:
        """Columns that are no feature unless named as one: the target and the time column."""
        time = [self.split.time_column] if self.split.time_column else []
        return [self.target, *time]


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
    """Transforms applied in order; each is fitted on the training split only.

    `include` says what becomes of the data columns the section does not name (neither the
    target nor the time column, nor in a transform, `passthrough` or `exclude`): `listed`
    leaves them out, listing them in one warning; `remaining` makes them features, numeric and
    boolean ones passed through, the others one-hot encoded with the one_hot defaults.
    """

    transforms: list[TransformSpec] = Field(default_factory=list)
    passthrough: list[str] = Field(default_factory=list, description="numeric columns used as-is")
    include: Literal["listed", "remaining"] = Field(
        "listed", description="what becomes of the columns not named: left out, or features"
    )
    exclude: list[str] = Field(
        default_factory=list, description="columns never used as features (ids, leaks)"
    )

    @model_validator(mode="after")
    def _check(self) -> FeaturesSpec:
        if self.include == "listed" and not self.transforms and not self.passthrough:
            raise ValueError(
                "no features: list columns in transforms or passthrough, or set "
                "include: remaining to use every column not named"
            )
        used = {c for t in self.transforms for c in t.columns} | set(self.passthrough)
        both = [c for c in self.exclude if c in used]
        if both:
            raise ValueError(f"exclude lists {both}, which feed features too; list a column "
                             "in one place")
        return self


class ModelSpec(_Section):
    """The model: a built-in builder (`mlp`, `cnn`, `transformer`) or a user's function.

    `hidden` feeds the mlp; `dropout` every built-in; `kwargs` go to the builder as keyword
    arguments (`cnn`: `image_shape: [C, H, W]`, `channels`; `transformer`: `sequence_shape:
    [T, D]`, `d_model`, `heads`, `layers`).
    """

    type: str = Field(
        "mlp", description="built-in name (mlp, cnn, transformer) or 'package.module:build_fn'"
    )
    task: Literal["binary", "multiclass", "regression"]
    hidden: list[PositiveInt] = Field(default_factory=lambda: [64, 32])
    dropout: float = Field(0.0, ge=0, lt=1)
    kwargs: dict[str, object] = Field(default_factory=dict)


UnitInterval = Annotated[float, Field(ge=0, lt=1)]


class OptimizerSpec(_Section):
    """The optimizer. `implementation: auto` uses fused kernels on CUDA and foreach elsewhere."""

    name: Literal["adamw", "adam", "sgd"] = "adamw"
    lr: PositiveFloat = 1e-3
    weight_decay: float = Field(0.0, ge=0)
    betas: tuple[float, float] = Field((0.9, 0.999), description="adam, adamw")
    eps: PositiveFloat = Field(1e-8, description="adam, adamw")
    momentum: UnitInterval = Field(0.0, description="sgd only")
    implementation: Literal["auto", "fused", "foreach", "for_loop"] = "auto"

    @field_validator("betas")
    @classmethod
    def _check_betas(cls, betas: tuple[float, float]) -> tuple[float, float]:
        if not all(0 <= beta < 1 for beta in betas):
            raise ValueError(f"each beta must be >= 0 and < 1, got {list(betas)}")
        return betas

    @model_validator(mode="after")
    def _check(self) -> OptimizerSpec:
        if self.momentum and self.name != "sgd":
            raise ValueError(f"momentum applies to sgd only, not {self.name} (it has betas)")
        return self


class ScheduleSpec(_Section):
    """The learning rate over optimizer steps: a warmup of `warmup_steps`, then the shape.

    Warmup rises linearly to `optimizer.lr` (`one_cycle`: from lr / div_factor, as a cosine).
    After it, `constant` stays; `step` multiplies by `gamma` every `step_size` steps; `cosine`
    and `linear` fall to `min_lr` at the last step; `one_cycle` falls to `min_lr` as a cosine.
    """

    name: Literal["constant", "step", "cosine", "linear", "one_cycle"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    step_size: PositiveInt = Field(1000, description="step: steps between decays")
    gamma: float = Field(0.1, gt=0, le=1, description="step: factor per decay")
    min_lr: float = Field(0.0, ge=0, description="cosine, linear, one_cycle: the final lr")
    div_factor: float = Field(25.0, ge=1, description="one_cycle: the first lr is lr / div_factor")
    pct_start: float = Field(
        0.3, gt=0, lt=1, description="one_cycle: share of steps rising when warmup_steps is 0"
    )


class ClipSpec(_Section):
    """Gradient clipping: by the total norm of all gradients, or each value into [-max, max]."""

    mode: Literal["norm", "value"] = "norm"
    max: PositiveFloat


class EarlyStoppingSpec(_Section):
    """Stop when `metric` (any metric the trainer logs) has not improved for `patience` epochs.

    Improving means beating the best value so far by more than `min_delta`.
    """

    metric: str = Field(min_length=1)
    mode: Literal["min", "max"] = "min"
    patience: int = Field(3, ge=0)
    min_delta: float = Field(0.0, ge=0)


class ProfilerSpec(_Section):
    """A `torch.profiler` trace of a few steps, saved as run artifact `profiler/trace.json`.

    `profiler: true` is short for `profiler: {enabled: true}`.
    """

    enabled: bool = False
    wait: int = Field(1, ge=0, description="steps skipped first")
    warmup: int = Field(1, ge=0, description="steps traced but discarded")
    active: PositiveInt = Field(3, description="steps recorded")

    @model_validator(mode="before")
    @classmethod
    def _from_bool(cls, data: object) -> object:
        return {"enabled": data} if isinstance(data, bool) else data


class CheckpointSpec(_FsspecOptions):
    """When checkpoints are saved, which are kept, and how a run resumes and stops
    (`trainforge.train.checkpoint`)."""

    location: str | None = Field(
        None, description="folder or s3://bucket/prefix holding a folder per run; "
        "None: the run's artifact folder"
    )
    every_n_steps: PositiveInt | None = None
    every_n_minutes: PositiveFloat | None = None
    at_epoch_end: bool = True
    keep_last: PositiveInt | None = Field(3, description="newest checkpoints kept; None keeps all")
    keep_best: int = Field(0, ge=0, description="best checkpoints by `monitor`, kept besides those")
    monitor: str | None = Field(None, description="metric that ranks checkpoints for keep_best")
    mode: Literal["min", "max"] = "min"
    async_save: bool = True
    sharded: bool = Field(
        True, description="FSDP: each process writes its own shards (torch.distributed."
        "checkpoint), loadable at another world size; false: the full state gathered to rank 0"
    )
    resume: Literal["never", "auto"] = Field(
        "never", description="auto: continue the newest unfinished run of the same spec that "
        "has a checkpoint, instead of starting a new run"
    )
    preempt_on: list[str] = Field(
        default_factory=lambda: ["SIGTERM"],
        description="signals that checkpoint at the next step and stop the run `preempted`",
    )

    @field_validator("preempt_on")
    @classmethod
    def _signal_names(cls, names: list[str]) -> list[str]:
        unknown = [name for name in names if not isinstance(getattr(signal, name, None),
                                                              signal.Signals)]
        if unknown:
            raise ValueError(f"unknown signal {unknown[0]!r}; expected a name such as "
                             "'SIGTERM' or 'SIGUSR1'")
        if "SIGKILL" in names or "SIGSTOP" in names:
            raise ValueError("SIGKILL and SIGSTOP cannot be caught")
        return names

    @model_validator(mode="after")
    def _check(self) -> CheckpointSpec:
        if self.keep_best and not self.monitor:
            raise ValueError("keep_best needs monitor (the metric that ranks checkpoints)")
        return self


class TrainingSpec(_Section):
    """How the model is trained; each nested section builds one component of the Trainer."""

    epochs: PositiveInt = 5
    batch_size: PositiveInt = Field(256, description="rows per micro-batch and process")
    accumulate_grad_batches: PositiveInt = Field(1, description="micro-batches per optimizer step")
    optimizer: OptimizerSpec = OptimizerSpec()
    schedule: ScheduleSpec = ScheduleSpec()
    clip: ClipSpec | None = None
    precision: Literal["fp32", "bf16-mixed", "fp16-mixed"] = "fp32"
    tf32: bool = Field(False, description="CUDA: TF32 matmuls and convolutions")
    strategy: Literal["single", "ddp", "fsdp"] = "single"
    early_stopping: EarlyStoppingSpec | None = None
    on_nan: Literal["error", "skip"] = "error"
    seed: int = 0
    deterministic: bool = Field(False, description="deterministic algorithms only")
    compile: bool = Field(False, description="torch.compile the model")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    num_workers: int = Field(0, ge=0, description="DataLoader workers (torch Dataset input)")
    pos_weight: PositiveFloat | None = Field(None, description="binary task: weight of positives")
    log_every_n_steps: PositiveInt = 50
    val_every_n_steps: PositiveInt | None = Field(
        None, description="validate every N optimizer steps too (default: after each epoch "
        "only); a tuning pruner then judges trials by steps, not epochs"
    )
    progress: Literal["auto", "bar", "plain", "off"] = Field(
        "auto", description="auto: a bar on a terminal, else plain lines (every 30 s and per epoch)"
    )
    profiler: ProfilerSpec = ProfilerSpec()
    checkpoint: CheckpointSpec = CheckpointSpec()

    @model_validator(mode="after")
    def _check(self) -> TrainingSpec:
        if self.schedule.min_lr > self.optimizer.lr:
            raise ValueError(
                f"schedule.min_lr ({self.schedule.min_lr:g}) is above optimizer.lr "
                f"({self.optimizer.lr:g})"
            )
        return self


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


class TrackingSpec(_Section):
    """Where a run's metrics go besides the tracking database."""

    tensorboard: bool = Field(
        False, description="also write TensorBoard files to <TRAINFORGE_HOME>/tensorboard/<run>"
    )


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

    @property
    def experiment_name(self) -> str:
        return self.experiment or self.name
