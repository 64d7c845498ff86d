"""When to save and what to keep: pure decisions over plain values, tested without I/O."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

from trainforge.config import CheckpointSpec
from trainforge.errors import CheckpointError
from trainforge.train.checkpoint._format import CheckpointInfo


def is_due(
    policy: CheckpointSpec,
    *,
    step: int,
    elapsed: float,
    epoch_end: bool,
    last_step: int | None,
    last_elapsed: float,
) -> bool:
    """Whether `policy` asks for a checkpoint at `step`.

    `elapsed` and `last_elapsed` are seconds on the caller's clock (e.g. since training started)
    now and at the last save; `last_step` is the step last saved (None: none yet). A step is
    saved at most once, even when several rules fire on it.
    """
    if step == last_step:
        return False
    if epoch_end and policy.at_epoch_end:
        return True
    if policy.every_n_steps and step > 0 and step % policy.every_n_steps == 0:
        return True
    minutes = policy.every_n_minutes
    if not minutes:
        return False
    return elapsed - last_elapsed >= minutes * 60


def select_deletions(
    checkpoints: Sequence[CheckpointInfo],
    *,
    keep_last: int | None,
    keep_best: int,
    monitor: str | None,
    mode: Literal["min", "max"],
    pinned: Collection[int] = (),
) -> list[CheckpointInfo]:
    """The checkpoints retention deletes, oldest first.

    Kept: the `keep_last` newest by step (None keeps everything) and, besides those, the
    `keep_best` best by metric `monitor` (lowest for "min", highest for "max"; ties go to the
    newer). Checkpoints without a value for `monitor` never count as best. So the best are never
    deleted by the last-K rule. The steps in `pinned` are kept whatever the rules say.
    """
    if keep_best and not monitor:
        raise CheckpointError("keep_best needs a monitor metric to rank checkpoints by")
    if keep_last is None:
        return []
    by_step = sorted(checkpoints, key=lambda c: c.step)
    keep = {c.step for c in by_step[-keep_last:]} if keep_last > 0 else set()
    sign = 1.0 if mode == "min" else -1.0
    scores = {c.step: sign * value for c in by_step
              if monitor and (value := c.metrics.get(monitor)) is not None}
    keep |= set(sorted(scores, key=lambda step: (scores[step], -step))[:keep_best])
    keep |= set(pinned)
    return [c for c in by_step if c.step not in keep]
