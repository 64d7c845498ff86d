"""Run tracking: the run handle (batched, asynchronous, lossless logging), reading runs back
and environment capture, over the store contracts of `trainforge.storage`.

    >>> import trainforge
    >>> with trainforge.start_run("fraud", params={"lr": 1e-3}) as run:   # doctest: +SKIP
    ...     run.log_metric("loss", 0.3, step=1)
    >>> trainforge.search_runs("fraud", filter="metrics.loss < 0.5")  # doctest: +SKIP

Names are imported on first use (`trainforge._lazy`): reading runs back loads neither the
run handle nor the SQL store until it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
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
    from trainforge.tracking._code import CodeRead, GitState, git_state
    from trainforge.tracking._defaults import default_store
    from trainforge.tracking._environment import capture_environment
    from trainforge.tracking._liveness import is_alive, process_record, where_running
    from trainforge.tracking._recorder import RunRecorder, SilentRun
    from trainforge.tracking._run import (
        RunHandle,
        active_run,
        open_run,
        replay_in_background,
        start_run,
    )
    from trainforge.tracking._system import (
        CheckpointEntry,
        CodeEntry,
        DataEntry,
        LaunchShape,
        PbtEntry,
        RegistrationEntry,
        ResumeEntry,
        SpecEntry,
        SystemRecord,
        TuningEntry,
        recorded_spec_of,
        system_of,
    )

_EXPORTS = {
    "DEFAULT_CRASH_TIMEOUT_S": "trainforge.tracking._api",
    "CodeRead": "trainforge.tracking._code",
    "DIFF_ARTIFACT": "trainforge.tracking._code",
    "code_object_key": "trainforge.tracking._code",
    "installed_packages": "trainforge.tracking._environment",
    "GitState": "trainforge.tracking._code",
    "RunComparison": "trainforge.tracking._api",
    "RunHandle": "trainforge.tracking._run",
    "RunRecorder": "trainforge.tracking._recorder",
    "SilentRun": "trainforge.tracking._recorder",
    "active_run": "trainforge.tracking._run",
    "capture_environment": "trainforge.tracking._environment",
    "collect_crashed_runs": "trainforge.tracking._api",
    "compare_runs": "trainforge.tracking._api",
    "comparison": "trainforge.tracking._api",
    "default_store": "trainforge.tracking._defaults",
    "get_metric_history": "trainforge.tracking._api",
    "get_run": "trainforge.tracking._api",
    "git_state": "trainforge.tracking._code",
    "is_alive": "trainforge.tracking._liveness",
    "CheckpointEntry": "trainforge.tracking._system",
    "CodeEntry": "trainforge.tracking._system",
    "DataEntry": "trainforge.tracking._system",
    "LaunchShape": "trainforge.tracking._system",
    "PbtEntry": "trainforge.tracking._system",
    "RegistrationEntry": "trainforge.tracking._system",
    "ResumeEntry": "trainforge.tracking._system",
    "SpecEntry": "trainforge.tracking._system",
    "SystemRecord": "trainforge.tracking._system",
    "TuningEntry": "trainforge.tracking._system",
    "system_of": "trainforge.tracking._system",
    "recorded_spec_of": "trainforge.tracking._system",
    "parse_filter": "trainforge.storage.query",
    "parse_sort": "trainforge.storage.query",
    "process_record": "trainforge.tracking._liveness",
    "replay_spills": "trainforge.tracking._api",
    "search_runs": "trainforge.tracking._api",
    "open_run": "trainforge.tracking._run",
    "replay_in_background": "trainforge.tracking._run",
    "start_run": "trainforge.tracking._run",
    "where_running": "trainforge.tracking._liveness",
}

__all__ = [
    "CheckpointEntry",
    "CodeEntry",
    "CodeRead",
    "DEFAULT_CRASH_TIMEOUT_S",
    "DIFF_ARTIFACT",
    "DataEntry",
    "GitState",
    "LaunchShape",
    "PbtEntry",
    "RegistrationEntry",
    "ResumeEntry",
    "RunComparison",
    "RunHandle",
    "RunRecorder",
    "SilentRun",
    "SpecEntry",
    "SystemRecord",
    "TuningEntry",
    "active_run",
    "capture_environment",
    "code_object_key",
    "collect_crashed_runs",
    "compare_runs",
    "comparison",
    "default_store",
    "get_metric_history",
    "get_run",
    "git_state",
    "installed_packages",
    "is_alive",
    "open_run",
    "parse_filter",
    "parse_sort",
    "process_record",
    "recorded_spec_of",
    "replay_in_background",
    "replay_spills",
    "search_runs",
    "start_run",
    "system_of",
    "where_running",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
