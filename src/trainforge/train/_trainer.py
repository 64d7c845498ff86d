"""The Trainer: one training loop whose `fit()` reads top to bottom.

    >>> trainer = Trainer(model, (x_train, y_train), (x_val, y_val),
    ...                   TrainingSpec(epochs=3), task="binary", run=run)  # doctest: +SKIP
    >>> result = trainer.fit()                                              # doctest: +SKIP

Each concern is a component built from its own `TrainingSpec` section and called at a named
point: precision (`_precision`), where training runs (`_strategy`), optimizer, schedule and
clipping (`_optim`), the NaN guard, throughput and early stopping (`_monitors`), progress
(`_progress`) and callbacks (`_callbacks`; the profiler and checkpointing (`_checkpointing`:
saves, resume, preemption) are callbacks too).

Contracts:
- a step is one optimizer step over `accumulate_grad_batches` micro-batches (fewer in the last
  window of an epoch); its gradients are those of the mean loss over all the window's rows, as
  one batch of those rows gives. `global_step` counts steps, skipped ones included;
- only rank 0 reports to `run`; logged metrics are means over ranks;
- each step reads one thing from the device: its loss, and with `on_nan: skip` or clipping
  also the norm of all gradients (both in one transfer); they feed the NaN guard, clipping and
  the logs. The logged `grad_norm` is otherwise measured at the log step;
- `state_dict()` taken at `on_step_end` or `on_epoch_end` resumes exactly: a Trainer built the
  same way and given `load_state_dict(state)` continues with the same batches, random numbers,
  learning rates and logged values as if it had never stopped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from trainforge.config import EvaluationSpec, TrainingSpec
from trainforge.errors import TrainingError
from trainforge.evaluate import outputs_to_scores, score_report
from trainforge.train._batches import Batch, TrainData, make_batches, row_count, windows
from trainforge.train._callbacks import Callback, CallbackList
from trainforge.train._checkpointing import Checkpointing
from trainforge.train._geometry import BatchGeometry, regroup, resume_batch
from trainforge.train._metric_names import logged_metric_names
from trainforge.train._monitors import EarlyStopping, NanGuard, NoEarlyStopping, Throughput
from trainforge.train._optim import LRSchedule, build_optimizer, make_clipper
from trainforge.train._precision import Precision, make_precision
from trainforge.train._preemption import PreemptionNotice
from trainforge.train._profiler import ProfilerCallback
from trainforge.train._progress import make_progress
from trainforge.train._reproducibility import TrainerRandomness
from trainforge.train._sinks import MetricSink, NullSink, TagSink
from trainforge.train._strategy import Strategy, make_strategy

EVAL_BATCH_ROWS = 1024
PROGRESS_KEYS = ("scheduler", "scaler", "rng", "data", "trainer")  # of `progress_state()`
STATE_KEYS = ("model", "optimizer", *PROGRESS_KEYS)


@dataclass
class TrainResult:
    """`model` is a plain module with the full trained weights (unwrapped, gathered)."""

    model: nn.Module
    epochs: int
    steps: int
    history: list[dict[str, float]] = field(default_factory=list)
    wall_s: float = 0.0
    stopped_early: bool = False
    skipped_steps: int = 0
    profile_trace: Path | None = None


@dataclass
class TrainState:
    """Where training is: the counters a resume needs beside the components' own states."""

    epoch: int = 0  # the epoch in progress, 0-based
    batch: int = 0  # the next micro-batch of that epoch
    global_step: int = 0
    should_stop: bool = False
    logged_step: int = 0  # global_step of the latest step log
    epoch_loss_sum: float = 0.0  # this epoch's step losses logged so far
    epoch_loss_steps: int = 0


def make_loss(task: str, pos_weight: float | None) -> nn.Module:
    """The mean loss of a task: BCE with logits (binary), cross-entropy, or MSE."""
    if task == "binary":
        weight = torch.tensor(pos_weight) if pos_weight else None
        return nn.BCEWithLogitsLoss(pos_weight=weight)
    if task == "multiclass":
        return nn.CrossEntropyLoss()
    return nn.MSELoss()


def infer_task(data: TrainData) -> str:
    """The task of (features, targets) arrays: integer targets are class ids (multiclass),
    float targets all 0 or 1 are binary, other floats regression."""
    if not isinstance(data, (tuple, list)):
        raise TrainingError("Trainer: pass task= ('binary', 'multiclass', 'regression') with a "
                            "torch Dataset")
    targets = np.asarray(data[1])
    if np.issubdtype(targets.dtype, np.integer):
        return "multiclass"
    return "binary" if np.isin(targets, (0.0, 1.0)).all() else "regression"


class Trainer:
    """Trains `model` on `train_data` with the settings of a `TrainingSpec`; see the module
    docstring. Data: (features, targets) arrays or a torch `Dataset` of such pairs."""

    def __init__(
        self,
        model: nn.Module,
        train_data: TrainData,
        val_data: TrainData | None = None,
        config: TrainingSpec | None = None,
        task: str | None = None,
        run: MetricSink | None = None,
        evaluation: EvaluationSpec | None = None,
        callbacks: Sequence[Callback] = (),
        *,
        checkpoint_dir: str | Path | None = None,
        resume: bool = False,
        preemption: PreemptionNotice | None = None,
        checkpoint_options: Mapping[str, Any] | None = None,
    ) -> None:
        """`checkpoint_dir` (default: `config.checkpoint.location`; neither: no checkpoints)
        holds this training's checkpoints, saved on the `config.checkpoint` policy and opened
        with `checkpoint_options` (default: the policy's storage options). `resume`:
        `fit()` starts from the newest valid checkpoint there, if any, and a run that records
        checkpoints (`CheckpointSink`, e.g. a `RunHandle`) drops its points after that step.
        `preemption`: a notice the entry point installed (`with notice.installed():`); a
        signal it names then saves a checkpoint at the next step and raises `Preempted`."""
        self.config = config = config or TrainingSpec()
        self.task = task or infer_task(train_data)
        self.evaluation = evaluation or EvaluationSpec()
        self.randomness = TrainerRandomness(config.seed, config.deterministic)
        self.strategy: Strategy = make_strategy(config.strategy, config.device)
        self.device = self.strategy.device
        self.precision: Precision = make_precision(config.precision, self.device, config.tf32)
        self.module = model
        wrapped = self.strategy.wrap(model)
        # torch.compile of a module is a module (OptimizedModule); its stubs say "a callable".
        self.model = cast(nn.Module, torch.compile(wrapped)) if config.compile else wrapped
        self.sink: MetricSink = run if run is not None and self.is_rank_zero else NullSink()
        self._build_data(train_data, val_data)
        self._build_numerics()
        self.progress = make_progress(config.progress, self.is_rank_zero)
        self.profiler = (ProfilerCallback(config.profiler)
                         if config.profiler.enabled and self.is_rank_zero else None)
        self.checkpointing = Checkpointing(
            config.checkpoint, self.strategy, checkpoint_dir or config.checkpoint.location,
            self.sink, resume=resume, run_id=getattr(run, "run_id", None), preemption=preemption,
            storage_options=checkpoint_options,
        )
        self.callbacks = CallbackList([*callbacks, *filter(None, [self.profiler]),
                                       self.checkpointing])
        self.state = TrainState()
        self.history: list[dict[str, float]] = []
        self._latest: dict[str, float] = {}
        self._emitted: dict[str, float] = {}  # logged at step `_emitted_step`
        self._emitted_step = -1
        self._window: list[float] = []  # step losses (means over ranks) since the latest log
        self._rows = 0  # rows trained on this rank since the latest log
        self._last_norm: float | None = None  # of the latest step, when read every step
        self._throughput = Throughput(self.strategy.world_size)

    @property
    def is_rank_zero(self) -> bool:
        return self.strategy.is_rank_zero

    @property
    def step_metrics(self) -> dict[str, float]:
        """The metrics logged at the current global step (a copy): what its checkpoint holds and
        is ranked by, so a mid-epoch checkpoint is not ranked by the last epoch's validation."""
        return dict(self._emitted) if self._emitted_step == self.state.global_step else {}

    def _build_data(self, train_data: TrainData, val_data: TrainData | None) -> None:
        config, strategy = self.config, self.strategy
        self._train_data = train_data
        self.geometry = BatchGeometry(config.batch_size, config.accumulate_grad_batches,
                                      strategy.world_size)
        self._build_train_batches()
        # Each rank validates its share of the rows (padded to equal shares, as training
        # shards), then every rank gathers all outputs; a BatchSource's rows are read whole.
        # `_shared_val_rows`: the validation rows when ranks share them, else None.
        self._shared_val_rows = row_count(val_data) if strategy.world_size > 1 else None
        sharded = self._shared_val_rows is not None
        self.val_batches = None if val_data is None else make_batches(
            val_data, self.task, max(config.batch_size, EVAL_BATCH_ROWS), self.device,
            shuffle=False, num_workers=config.num_workers,
            rank=strategy.rank if sharded else 0, world_size=strategy.world_size if sharded else 1,
        )

    def _build_train_batches(self) -> None:
        """The training batches and steps per epoch of the current `geometry`."""
        config, strategy = self.config, self.strategy
        self.train_batches = make_batches(
            self._train_data, self.task, self.geometry.batch_size, self.device, shuffle=True,
            seed=config.seed, rank=strategy.rank, world_size=strategy.world_size,
            num_workers=config.num_workers,
        )
        self.steps_per_epoch = -(-len(self.train_batches) // self.geometry.accumulate)

    def _build_numerics(self) -> None:
        config = self.config
        self.loss_fn = make_loss(self.task, config.pos_weight).to(self.device)
        self._squeeze = self.task != "multiclass"
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = build_optimizer(config.optimizer, self.params, self.device)
        total_steps = config.epochs * self.steps_per_epoch
        self.schedule = LRSchedule(config.schedule, self.optimizer, total_steps)
        self.clip = make_clipper(config.clip)
        self._norm_every_step = config.on_nan == "skip" or config.clip is not None
        self.nan_guard = NanGuard(config.on_nan, list(self.module.named_parameters()),
                                  check_grads=not self.precision.handles_overflow)
        self.early_stopping = (EarlyStopping(config.early_stopping)
                               if config.early_stopping else NoEarlyStopping())

    def fit(self) -> TrainResult:
        """Train from the current state until `epochs`, early stopping or a callback's stop."""
        started = time.perf_counter()
        with self.randomness.active():  # the trainer's seeded generators, not the process's
            self._begin_fit()
            self.callbacks.on_fit_start(self)
            try:
                while self.state.epoch < self.config.epochs and not self.state.should_stop:
                    self.callbacks.on_epoch_start(self)
                    if not self._train_epoch():  # 1. optimizer steps over the epoch's batches
                        break  # a callback stopped training mid-epoch
                    self._end_epoch()  # 2. last step log, validation, early stopping
                    self.callbacks.on_epoch_end(self)
            except BaseException as error:
                self.callbacks.on_exception(self, error)
                raise
            finally:
                self.progress.close()
            self.callbacks.on_fit_end(self)
        return self._result(time.perf_counter() - started)

    def _train_epoch(self) -> bool:
        """Steps over this epoch's batches from `state.batch`; False if a callback stopped."""
        state = self.state
        self.model.train()
        self.progress.start_epoch(state.epoch, self.config.epochs, len(self.train_batches),
                                  state.batch)
        batches = self.train_batches.epoch(state.epoch, start=state.batch)
        for window in windows(batches, self.geometry.accumulate):
            loss = self._forward_backward(window)
            self._optimizer_step(loss)
            state.batch += len(window)
            state.global_step += 1
            if state.global_step % self.config.log_every_n_steps == 0:
                self._log_step()
            if self._validate_now():
                self._emit(self._validate())
                self.model.train()
            self.callbacks.on_step_end(self)
            if state.should_stop:
                return False
        return True

    def _forward_backward(self, window: tuple[Batch, ...]) -> torch.Tensor:
        """Forward and backward over one window; returns its mean loss, detached."""
        self.optimizer.zero_grad(set_to_none=True)
        if len(window) == 1:  # no accumulation: nothing to weigh, no sync to defer
            features, targets = window[0]
            self._rows += features.shape[0]
            with self.precision.autocast():
                loss = self._loss(features, targets)
            self.precision.backward(loss)
            return loss.detach()
        return self._accumulate(window)

    def _accumulate(self, window: tuple[Batch, ...]) -> torch.Tensor:
        """Each micro-batch's mean loss weighted by its share of the window's rows, so the
        summed gradients are those of the window's mean loss; ranks sync on the last one."""
        rows = sum(features.shape[0] for features, _ in window)
        self._rows += rows
        total = torch.zeros((), device=self.device)
        for index, (features, targets) in enumerate(window):
            with self.strategy.sync_gradients(index == len(window) - 1):
                with self.precision.autocast():
                    loss = self._loss(features, targets) * (features.shape[0] / rows)
                self.precision.backward(loss)
            total += loss.detach()
        return total

    def _loss(self, features: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        output = self.model(features)
        return self.loss_fn(output.squeeze(-1) if self._squeeze else output, targets)

    def _optimizer_step(self, loss: torch.Tensor) -> None:
        """Unscale, read, check, clip and apply the gradients. A step the NaN guard skips
        (on_nan: skip) or an fp16 overflow skips leaves no loss in the logs and no lr step."""
        self.precision.unscale(self.optimizer)
        grads: list[torch.Tensor] = []
        if self._norm_every_step:
            grads = self._grads()
            loss_value, self._last_norm = self.strategy.step_values(loss, grads)
        else:
            loss_value = self.strategy.loss_value(loss)
        if self.nan_guard.check(loss_value, self._last_norm, self._where):
            self.clip(grads, self._last_norm)
            if self.precision.step(self.optimizer):
                self.schedule.step()
                self._window.append(loss_value)

    def _grads(self) -> list[torch.Tensor]:
        return [p.grad for p in self.params if p.grad is not None]

    def _where(self) -> str:
        state = self.state
        return f"step {state.global_step + 1} (epoch {state.epoch + 1}, batch {state.batch + 1})"

    def _log_step(self) -> None:
        """Log the steps since the latest log: mean loss, lr, gradient norm, throughput."""
        state = self.state
        steps = state.global_step - state.logged_step
        if steps == 0:
            return
        losses, self._window = self._window, []
        state.epoch_loss_sum += sum(losses)
        state.epoch_loss_steps += len(losses)
        norm = self._last_norm if self._norm_every_step else self.strategy.grad_norm(self._grads())
        metrics = {"lr": self.schedule.last_lr, "grad_norm": norm,
                   **self._throughput.measure(self._rows, steps)}
        if losses:
            metrics = {"train_loss": sum(losses) / len(losses), **metrics}
        self._rows = 0
        state.logged_step = state.global_step
        self._emit(metrics)
        self.progress.update(state.batch, state.global_step, metrics)

    def _validate_now(self) -> bool:
        """Whether this step validates mid-epoch (`val_every_n_steps`; never on an epoch's
        last step, which validates at the epoch's end)."""
        every = self.config.val_every_n_steps
        return (every is not None and self.state.global_step % every == 0
                and self.state.batch < len(self.train_batches))

    def _end_epoch(self) -> None:
        """Close the epoch: the last step log, validation, early stopping; advance the state."""
        state = self.state
        self._log_step()
        epoch_loss = state.epoch_loss_sum / state.epoch_loss_steps if state.epoch_loss_steps \
            else math.nan
        summary = {"epoch": float(state.epoch + 1), "train_loss_epoch": epoch_loss,
                   **self._validate()}
        self._emit(summary)
        self.history.append(summary)
        state.should_stop = self.early_stopping.update(self._latest)
        self.progress.end_epoch(summary)
        state.epoch, state.batch = state.epoch + 1, 0
        state.epoch_loss_sum, state.epoch_loss_steps = 0.0, 0

    @torch.no_grad()
    def _validate(self) -> dict[str, float]:
        """Loss and task metrics on the whole validation set: each rank scores its share of the
        rows, every rank gathers all outputs in row order and computes the same metrics, equal
        to one process's (ROC-AUC and other ranking metrics need every score, not a mean)."""
        if self.val_batches is None:
            return {}
        self.module.eval()
        outputs, targets = [], []
        with self.precision.autocast():
            for features, target in self.val_batches.epoch(0):
                outputs.append(self.module(features).float())
                targets.append(target)
        output, target = torch.cat(outputs), torch.cat(targets)
        if self._shared_val_rows is not None:
            output, target = self._in_row_order(output), self._in_row_order(target)
        loss = self.loss_fn(output.squeeze(-1) if self._squeeze else output, target).item()
        report = score_report(outputs_to_scores(output, self.task), target.cpu().numpy(),
                              self.task, self.evaluation, "val")
        return {"val_loss": loss, **report.prefixed()}

    def _in_row_order(self, shard: torch.Tensor) -> torch.Tensor:
        """Every rank's `shard` of the validation rows (rank r holds rows r, r + W, ...;
        padded by rows from the start) back in row order, padding dropped."""
        gathered = self.strategy.gather(shard)  # [ranks, rows per rank, ...]
        return gathered.transpose(0, 1).reshape(-1, *shard.shape[1:])[: self._shared_val_rows]

    def _emit(self, metrics: dict[str, float]) -> None:
        step = self.state.global_step
        if step != self._emitted_step:
            self._emitted, self._emitted_step = {}, step
        self._emitted.update(metrics)
        self._latest.update(metrics)
        self.sink.log_metrics(metrics, step)

    def _begin_fit(self) -> None:
        """Start the throughput clock; record the set-up on a run that takes tags."""
        self._throughput.reset()
        if isinstance(self.sink, TagSink):
            config = self.config
            self.sink.set_tags({"trainer": {
                "device": str(self.device), "world_size": self.strategy.world_size,
                "strategy": self.strategy.name, "precision": self.precision.name,
                "deterministic": config.deterministic, "seed": config.seed,
                "compile": config.compile, "batch_size": self.geometry.batch_size,
                "accumulate_grad_batches": self.geometry.accumulate,
            }})

    def _result(self, wall_s: float) -> TrainResult:
        self._log_step()  # steps after the latest log when a callback stopped mid-epoch
        self.optimizer.zero_grad(set_to_none=True)  # the last step's gradients are not needed
        return TrainResult(
            model=self.strategy.export(self.module),
            epochs=self.state.epoch,
            steps=self.state.global_step,
            history=list(self.history),
            wall_s=wall_s,
            stopped_early=self.state.epoch < self.config.epochs,
            skipped_steps=self.nan_guard.skipped,
            profile_trace=self.profiler.trace if self.profiler else None,
        )

    def state_dict(self) -> dict[str, Any]:
        """Everything an exact resume needs, laid out as `trainforge.train.checkpoint` saves
        it: model, optimizer, scheduler, scaler, rng, data (epoch, batch, seed, geometry),
        trainer. Under FSDP every rank calls it (the full state is gathered to rank 0)."""
        return {
            "model": self.strategy.model_state(self.module),
            "optimizer": self.strategy.optimizer_state(self.module, self.optimizer),
            **self.progress_state(),
        }

    def progress_state(self) -> dict[str, Any]:
        """`state_dict()` without the model and optimizer: what a sharded checkpoint keeps
        beside each rank's shards (`strategy.sharded_state`)."""
        state = self.state
        trainer = {k: v for k, v in asdict(state).items() if k not in ("epoch", "batch")}
        trainer.update(
            best_metric=self.early_stopping.best,
            early_stopping=self.early_stopping.state_dict(),
            window_losses=list(self._window),
            history=[dict(h) for h in self.history],
            latest=dict(self._latest),
        )
        geometry = self.geometry
        return {
            "scheduler": self.schedule.state_dict(),
            "scaler": self.precision.state_dict(),
            "rng": self.randomness.state(),
            "data": {"epoch": state.epoch, "batch": state.batch, "seed": self.config.seed,
                     "batch_size": geometry.batch_size, "accumulate": geometry.accumulate,
                     "world_size": geometry.world_size},
            "trainer": trainer,
        }

    def metric_names(self) -> list[str]:
        """The series this trainer logs (`logged_metric_names`, and any it has logged): those
        a resume rewinds."""
        return sorted({*logged_metric_names(self.task), *self._latest})

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from `state` (from `state_dict()` of a Trainer built the same way, at any
        world size: see `load_progress_state`)."""
        missing = [key for key in STATE_KEYS if key not in state]
        if missing:
            raise TrainingError(f"trainer state: missing {', '.join(missing)}")
        self.strategy.load_model_state(self.module, state["model"])
        self.strategy.load_optimizer_state(self.module, self.optimizer, state["optimizer"])
        self.load_progress_state(state)

    def load_progress_state(self, state: Mapping[str, Any]) -> None:
        """Continue from `progress_state()`'s part of a state (the model and optimizer are
        loaded already). Saved at another world size, training keeps the saved global batch
        and goes on at the first row of the epoch no rank trained on (`_geometry`)."""
        missing = [key for key in PROGRESS_KEYS if key not in state]
        if missing:
            raise TrainingError(f"trainer state: missing {', '.join(missing)}")
        data, trainer = state["data"], state["trainer"]
        if data["seed"] != self.config.seed:
            raise TrainingError(f"trainer state: saved with training.seed {data['seed']}, this "
                                f"trainer has {self.config.seed}; the batch order would differ")
        saved = BatchGeometry(int(data.get("batch_size", self.geometry.batch_size)),
                              int(data.get("accumulate", self.geometry.accumulate)),
                              int(data.get("world_size", self.geometry.world_size)))
        geometry = regroup(saved, self.strategy.world_size, self.config.batch_size)
        batch = resume_batch(saved, int(data["batch"]), geometry)
        if geometry != self.geometry:
            self.geometry = geometry
            self._build_train_batches()
        self.schedule.load_state_dict(state["scheduler"])
        self.precision.load_state_dict(state["scaler"])
        self.early_stopping.load_state_dict(trainer["early_stopping"])
        counters = {k: trainer[k] for k in asdict(TrainState()) if k in trainer}
        self.state = TrainState(**{**counters, "epoch": data["epoch"], "batch": batch})
        self._window = [float(v) for v in trainer["window_losses"]]
        self.history = [dict(h) for h in trainer["history"]]
        self._latest = {str(k): float(v) for k, v in trainer.get("latest", {}).items()}
        self.randomness.load(state["rng"])
