"""Helpers of the contract suite: making runs, and walking pages one by one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from trainforge.entities import MetricPoint, Run
from trainforge.storage import MetricStore, Page, Store

T = TypeVar("T")
MISSING = "0" * 32
RUN_MISSING = f"run '{MISSING}' not found"


def new_run(store: Store, experiment: str = "exp", params: dict[str, Any] | None = None,
            **kwargs: Any) -> Run:
    experiment_id = store.get_or_create_experiment(experiment).experiment_id
    return store.create_run(experiment_id, params or {}, {}, "file:///a", **kwargs)


def ids(runs: Iterable[Run]) -> list[str]:
    return [run.run_id for run in runs]


def log(metrics: MetricStore, run_id: str, key: str, steps: list[int], first: float = 0.0) -> None:
    """Points of `key` at `steps`, each valued `first + step`, at timestamp 1000 + step."""
    metrics.log_metrics(run_id, [MetricPoint(key, first + s, s, 1000.0 + s) for s in steps])


def pages(fetch: Callable[[str | None], Page[T]]) -> list[Page[T]]:
    """Every page of a listing, in order, fetched one after the other."""
    found = [fetch(None)]
    while found[-1].next_cursor is not None:
        found.append(fetch(found[-1].next_cursor))
    return found
