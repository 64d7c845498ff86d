"""Steps the runner tests run; at module level, so a step with a timeout can be imported by
its own process."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd

from trainforge.errors import DataError, ObjectStoreError, Preempted
from trainforge.orchestration import StepContext


def numbers(count: int = 4) -> pd.DataFrame:
    return pd.DataFrame({"x": list(range(count))})


def doubled(frame: pd.DataFrame) -> pd.DataFrame:
    return frame * 2


def total(frame: pd.DataFrame) -> float:
    return float(frame["x"].sum())


def flaky(frame: pd.DataFrame, ctx: StepContext, failures: int = 2,
          kind: str = "transient") -> float:
    """Fails its first `failures` attempts with an error of `kind`."""
    if ctx.attempt <= failures:
        if kind == "transient":
            raise ObjectStoreError("s3://bucket/x", "SlowDown, try again")
        if kind == "data":
            raise DataError("rows.csv line 3: x: expected a number")
        raise ValueError("a bug")
    return float(len(frame))


def sleepy(pid_file: str = "", seconds: float = 60.0) -> int:
    """Writes its pid, then sleeps."""
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(seconds)
    return os.getpid()


def where(frame: pd.DataFrame) -> dict:
    """Runs anywhere; says in which process and what it got."""
    return {"pid": os.getpid(), "rows": len(frame)}


def wait(seconds: float = 1.0) -> float:
    time.sleep(seconds)
    return seconds


def broken(frame: pd.DataFrame) -> float:
    raise ValueError("broken on purpose")


def handed_on(frame: pd.DataFrame) -> dict:
    """Its input as it is, beside a new value."""
    return {"same": frame, "rows": len(frame)}


def is_same(frame: pd.DataFrame, same: pd.DataFrame) -> bool:
    """Whether both inputs are one object: the one the first step produced, not decoded."""
    return frame is same


def preempted(frame: pd.DataFrame) -> float:
    raise Preempted("SIGTERM")


def gathered(frame: pd.DataFrame, ctx: StepContext) -> dict:
    """Runs in a process group: every rank's pid and rows, gathered; rank 0's return is the
    step's."""
    import torch.distributed as dist

    rows = len(frame)
    found: list = [None] * dist.get_world_size()
    dist.all_gather_object(found, {"rank": dist.get_rank(), "pid": os.getpid(), "rows": rows})
    if ctx.recorder is not None:
        ctx.recorder.set_tags({f"rank{dist.get_rank()}": "recorded"})
    return {"ranks": found, "world_size": dist.get_world_size()}


def fails_on_rank_1(frame: pd.DataFrame) -> int:
    import torch.distributed as dist

    if dist.get_rank() == 1:
        raise DataError(f"rank 1 refuses the {len(frame)} rows")
    return len(frame)


def counted(frame: pd.DataFrame, ctx: StepContext) -> int:
    """Logs how many rows it saw as a metric series of the run its context records to."""
    assert ctx.recorder is not None
    ctx.recorder.log_metrics({"rows_seen": float(len(frame))}, step=ctx.attempt)
    return len(frame)
