"""Run tracking: the run handle (batched, asynchronous, lossless logging), reading runs back
and environment capture, over the store contracts of `trainforge.storage`.

    >>> import trainforge
    >>> with trainforge.start_run("fraud", params={"lr": 1e-3}) as run:   # doctest: +SKIP
    ...     run.log_metric("loss", 0.3, step=1)
    >>> trainforge.search_runs("fraud", filter="metrics.loss < 0.5")  # doctest: +SKIP
"""

from trainforge.storage.query import parse_filter, parse_sort
from trainforge.tracking._api import (
    DEFAULT_CRASH_TIMEOUT_S,
    RunComparison,
    collect_crashed_runs,
    compare_runs,
    comparison,
    get_metric_history,
    get_run,
    replay_spills,
    search_runs,
)
from trainforge.tracking._defaults import default_store
from trainforge.tracking._environment import GitState, capture_environment, git_state
from trainforge.tracking._recorder import RunRecorder
from trainforge.tracking._run import RunHandle, active_run, start_run

__all__ = [
    "DEFAULT_CRASH_TIMEOUT_S",
    "GitState",
    "RunComparison",
    "RunHandle",
    "RunRecorder",
    "active_run",
    "capture_environment",
    "collect_crashed_runs",
    "compare_runs",
    "comparison",
    "default_store",
    "get_metric_history",
    "get_run",
    "git_state",
    "parse_filter",
    "parse_sort",
    "replay_spills",
    "search_runs",
    "start_run",
]
