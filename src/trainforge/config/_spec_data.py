"""The spec's `data` and `features` sections."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from trainforge.config._sections import _FsspecOptions, _Section


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
    snapshot: bool = Field(
        True, description="store the files read as a data version (content-addressed: only "
        "files the store lacks are copied), numbered under `name`, so the run can be "
        "reproduced from its record; false: record only their content id"
    )
    name: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$",
        description="the name the source's snapshots are numbered under (NAME@1, NAME@2, "
        "... and NAME@latest): letters, digits, '_', '.' or '-', starting with a letter or "
        "digit; None: the pipeline's name"
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
