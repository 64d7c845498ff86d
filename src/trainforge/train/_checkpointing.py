"""The trainer's checkpointing: save on the policy, resume from the newest checkpoint, and turn a
preemption signal into a checkpoint and a stop.

    fit start   resume: load the newest valid checkpoint (every rank), drop the run's metric
                points after its step; arm the preemption notice (its entry point installed
                the signal handlers)
    step end    after the first step only: rank 0 prepares its async save's CPU buffer in
                the background (`CheckpointManager.prepare`), so the first async save stalls
                no longer than the later ones
                save when the policy says so (not on an epoch's last step: its epoch-end
                save follows, after the epoch's validation is logged)
    epoch end   save when the policy says so
    either      a preemption signal arrived: save now (blocking), raise `Preempted`
    fit end     wait for the save in flight; disarm the notice

Contracts:
- a checkpoint of step s is committed only after every metric point up to s reached the run
  (flushed first), and a resumed run deletes the points after s before logging any; so the
  run's series has every step once;
- under DDP/FSDP all ranks take the same decisions (step rules are the same everywhere; the
  clock rule and preemption are agreed by one all-reduce per step). DDP: rank 0 writes the
  state. FSDP (`checkpoint.sharded`, the default): each rank writes its own shards and rank 0
  the rest (`CheckpointManager.save_sharded`), over a gloo group kept for checkpoints; with
  `sharded: false` the full state is gathered to rank 0, which writes it. Every rank reads the
  checkpoint to resume, so with several nodes the location must be shared storage (s3:// or a
  shared folder);
- a resume at another world size (a sharded checkpoint is resharded as it is read, a full one
  is read whole) keeps the saved global batch and the epoch's unseen rows
  (`Trainer.load_progress_state`).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from trainforge.config import CheckpointSpec
from trainforge.errors import Preempted, TrainingError
from trainforge.train._callbacks import Callback
from trainforge.train._preemption import PreemptionNotice
from trainforge.train._sinks import CheckpointSink
from trainforge.train._strategy import FSDPStrategy, Strategy
from trainforge.train.checkpoint import (
    CheckpointInfo,
    CheckpointManager,
    CheckpointWarning,
    is_due,
)

if TYPE_CHECKING:
    from trainforge.train._trainer import Trainer

log = logging.getLogger("trainforge")
PREPARE_HEADROOM = 0.01  # of the model and optimizer bytes: RNG, schedule and trainer tensors


@dataclass(frozen=True)
class _Sharding:
    """Sharded checkpoints of an FSDP strategy: the gloo group their collectives run on,
    made by every rank together when `Checkpointing` is built, so a background save never
    interleaves with training's collectives on the default group."""

    strategy: FSDPStrategy
    group: dist.ProcessGroup


class Checkpointing(Callback):
    """See the module docstring. `location` None: no checkpoints are written (a preemption
    signal still stops training, without a checkpoint to resume from); `preemption` None: no
    signal stops training; `storage_options` open the location (default: the policy's)."""

    def __init__(
        self,
        policy: CheckpointSpec,
        strategy: Strategy,
        location: str | Path | None,
        sink: object,
        *,
        resume: bool = False,
        run_id: str | None = None,
        preemption: PreemptionNotice | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.policy = policy
        self.strategy = strategy
        self.sink = sink if isinstance(sink, CheckpointSink) else None
        self.resume = resume
        self.manager = None if location is None else CheckpointManager(
            location, policy, run_id, storage_options=(
                dict(storage_options) if storage_options is not None
                else policy.fsspec_options()),
            on_saved=self._saved, on_deleted=self._deleted,
        )
        self.preemption = preemption
        self.resumed_from: CheckpointInfo | None = None
        self._last_step: int | None = None
        self._last_elapsed = 0.0
        self._started = time.monotonic()
        self._epoch_batches = 0
        self._prepared = False
        self._sharding = (_Sharding(strategy, dist.new_group(backend="gloo"))
                          if self.manager is not None and policy.sharded
                          and isinstance(strategy, FSDPStrategy) else None)

    def on_fit_start(self, trainer: Trainer) -> None:
        if self.resume:
            self._restore(trainer)
        self._started = time.monotonic() - self._last_elapsed
        self._epoch_batches = len(trainer.train_batches)
        if self.preemption is not None:
            self.preemption.arm()

    def on_step_end(self, trainer: Trainer) -> None:
        if not self._prepared:
            self._prepare(trainer)
        if trainer.state.batch < self._epoch_batches:
            self._at_boundary(trainer, epoch_end=False)

    def on_epoch_end(self, trainer: Trainer) -> None:
        self._at_boundary(trainer, epoch_end=True)

    def on_fit_end(self, trainer: Trainer) -> None:
        self._close()

    def on_exception(self, trainer: Trainer, error: BaseException) -> None:
        try:
            self._close()
        except Exception:  # noqa: BLE001 - the training error matters more
            log.exception("checkpointing: closing after a training error failed")

    def _at_boundary(self, trainer: Trainer, epoch_end: bool) -> None:
        requested = self.preemption.requested if self.preemption is not None else None
        stop = requested is not None
        if self.manager is None and self.strategy.world_size == 1 and not stop:
            return  # nothing to save or agree on: the per-step cost stays a few attribute reads
        step = trainer.state.global_step
        elapsed = time.monotonic() - self._started
        due = self.manager is not None and is_due(
            self.policy, step=step, elapsed=elapsed, epoch_end=epoch_end,
            last_step=self._last_step, last_elapsed=self._last_elapsed,
        )
        if self.strategy.world_size > 1:
            due, stop = self._agree(due, stop)
        if self.manager is not None and (due or stop) and self._last_step != step:
            self._save(trainer, step, elapsed, blocking=True if stop else None)
        if stop:
            if self.manager is not None:
                self.manager.wait()
            raise Preempted(requested or "a signal to another rank",
                            step if self.manager is not None else None)

    def _prepare(self, trainer: Trainer) -> None:
        """After the first step (the optimizer's state exists): rank 0 makes its asynchronous
        save's CPU buffer ready in the background, sized from the local (for FSDP, sharded)
        model and optimizer states plus headroom for the rest, so no collective runs here."""
        self._prepared = True
        if self.manager is not None and self.strategy.is_rank_zero and self._sharding is None:
            self.manager.prepare({"model": trainer.module.state_dict(),
                                  "optimizer": trainer.optimizer.state_dict()},
                                 headroom=PREPARE_HEADROOM)

    def _save(self, trainer: Trainer, step: int, elapsed: float, blocking: bool | None) -> None:
        assert self.manager is not None
        if self.sink is not None:
            self.sink.flush()  # the points up to `step` are stored before the checkpoint commits
        if self._sharding is not None:  # every rank writes its shards, rank 0 the rest
            shards = self._sharding.strategy.sharded_state(trainer.module, trainer.optimizer)
            self.manager.save_sharded(step, shards, trainer.progress_state(),
                                      self._sharding.group, epoch=trainer.state.epoch,
                                      metrics=trainer.step_metrics, blocking=blocking)
        else:
            state = trainer.state_dict()  # on every rank: FSDP gathers the full state
            if self.strategy.is_rank_zero:
                self.manager.save(step, state, epoch=trainer.state.epoch,
                                  metrics=trainer.step_metrics, blocking=blocking)
        self._last_step, self._last_elapsed = step, elapsed

    def _agree(self, due: bool, stop: bool) -> tuple[bool, bool]:
        """Rank 0's save decision (its clock rules), and a stop if any rank was signalled."""
        local = torch.tensor([float(due and self.strategy.is_rank_zero), float(stop)],
                             device=self.strategy.device)
        due_any, stop_any = self.strategy.reduce_sum(local).tolist()
        return due_any > 0, stop_any > 0

    def _restore(self, trainer: Trainer) -> None:
        """Continue from the newest valid checkpoint, if there is one; drop the points of the
        trainer's series after its step (all of them when there is none: training starts
        over), never those other steps of the run logged."""
        info = None
        latest = self.manager.latest() if self.manager is not None else None
        if self.manager is not None and latest is not None and latest.sharded_by is not None:
            if self._sharding is None:
                raise TrainingError(
                    f"{latest.uri}: a sharded checkpoint (FSDP over {latest.sharded_by} "
                    "processes); resume it with training.strategy: fsdp and "
                    f"checkpoint.sharded: true (this is {self.strategy.name!r}, sharded: "
                    f"{str(self.policy.sharded).lower()})")
            fsdp = self._sharding.strategy
            shards = fsdp.sharded_state(trainer.module, trainer.optimizer)
            rest, info = self.manager.load_sharded(shards, self._sharding.group)
            fsdp.load_sharded_state(trainer.module, trainer.optimizer, shards)
            trainer.load_progress_state(rest)
        elif self.manager is not None and latest is not None:
            state, info = self.manager.load()
            trainer.load_state_dict(state)
        if info is not None:
            self.resumed_from = info
            self._last_step = info.step
            log.info("resumed from the checkpoint of step %d (%s)", info.step, info.uri)
        if self.sink is not None:
            self.sink.truncate_metrics(info.step if info is not None else -1,
                                       trainer.metric_names())
            if self.manager is not None:  # saves killed before their records: recorded now,
                with warnings.catch_warnings():  # so that retention's deletions are too
                    warnings.simplefilter("ignore", CheckpointWarning)  # `latest` warned
                    for saved in self.manager.list():
                        self._saved(saved)

    def _close(self) -> None:
        if self.preemption is not None:
            self.preemption.disarm()
        if self.manager is not None:
            self.manager.close()

    def _saved(self, info: CheckpointInfo) -> None:
        if self.sink is not None:
            self.sink.record_checkpoint(info.step, info.uri, info.epoch, info.metric_values)

    def _deleted(self, info: CheckpointInfo) -> None:
        if self.sink is not None:
            self.sink.mark_checkpoint_deleted(info.step)
