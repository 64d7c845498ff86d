"""Run tracking: the store contract, the run handle and environment capture."""

from trainforge.tracking._environment import GitState, capture_environment, git_state
from trainforge.tracking._run import RunHandle, start_run
from trainforge.tracking._store import TrackingStore

__all__ = [
    "GitState",
    "RunHandle",
    "TrackingStore",
    "capture_environment",
    "git_state",
    "start_run",
]
