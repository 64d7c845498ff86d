"""The spec's `model` and `training` sections."""

from __future__ import annotations

import signal
from typing import Annotated, Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from trainforge.config._sections import _FsspecOptions, _Section


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
