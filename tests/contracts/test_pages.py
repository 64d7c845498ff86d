"""Every list method pages the same way: walking all pages returns each item once, in the
order of one big page; `limit` < 1 and cursors that are malformed or made by another listing
are refused with `ValueError` naming them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from contract_helpers import new_run, pages

from trainforge.entities import MetricPoint, ModelStage, Pipeline
from trainforge.storage import Page, Store

Fetch = Callable[[int, "str | None"], Page[Any]]


def _experiments(store: Store) -> Fetch:
    for name in ["f", "a", "e", "b", "d", "c", "g"]:
        store.get_or_create_experiment(name)
    return lambda limit, cursor: store.list_experiments(limit, cursor)


def _runs(store: Store) -> Fetch:
    for number in range(7):
        new_run(store, f"exp{number % 2}")
    return lambda limit, cursor: store.list_runs(limit=limit, cursor=cursor)


def _search(store: Store) -> Fetch:
    for number, auc in enumerate([0.5, None, 0.5, 0.9, None, float("nan"), 0.1]):
        run = new_run(store, params={"p": number if number % 3 else f"s{number}"})
        if auc is not None:
            store.set_summary_metrics(run.run_id, {"auc": auc})
    return lambda limit, cursor: store.search_runs(sort="-metrics.auc,params.p", limit=limit,
                                                   cursor=cursor)


def _history(store: Store) -> Fetch:
    run_id = new_run(store).run_id
    store.log_metrics(run_id, [MetricPoint("loss", float(i), i // 2, float(i // 3))
                               for i in range(9)])
    return lambda limit, cursor: store.get_metric_history(run_id, "loss", limit=limit,
                                                          cursor=cursor)


def _keys(store: Store) -> Fetch:
    run_id = new_run(store).run_id
    store.log_metrics(run_id, [MetricPoint(f"k{i}", 1.0, 0, 0.0) for i in range(7)])
    return lambda limit, cursor: store.metric_keys(run_id, limit, cursor)


def _checkpoints(store: Store) -> Fetch:
    run_id = new_run(store).run_id
    for step in range(7, 0, -1):
        store.record_checkpoint(run_id, step * 10, f"u{step}")
    return lambda limit, cursor: store.list_checkpoints(run_id, limit=limit, cursor=cursor)


def _model_versions(store: Store) -> Fetch:
    run_id = new_run(store).run_id
    for name in ["m", "l", "m", "m", "l", "m", "l"]:
        store.create_model_version(name, run_id, "u", ModelStage.NONE, {})
    return lambda limit, cursor: store.list_model_versions(limit=limit, cursor=cursor)


def _pipeline_runs(store: Store) -> Fetch:
    store.upsert_pipeline(Pipeline("p", "p", {}))
    for number in range(7):  # started in one second or in several: ties go by id
        store.create_pipeline_run(f"pr{(number * 3) % 7}", "p", {}, {})
    return lambda limit, cursor: store.list_pipeline_runs(limit=limit, cursor=cursor)


LISTINGS: dict[str, Callable[[Store], Fetch]] = {
    "list_experiments": _experiments, "list_runs": _runs, "search_runs": _search,
    "get_metric_history": _history, "metric_keys": _keys, "list_checkpoints": _checkpoints,
    "list_model_versions": _model_versions, "list_pipeline_runs": _pipeline_runs,
}


@pytest.fixture(params=list(LISTINGS))
def listing(request: pytest.FixtureRequest, store: Store) -> tuple[str, Fetch]:
    """The name of a listing, and its fetch over items made for it."""
    return request.param, LISTINGS[request.param](store)


def test_walking_every_page_returns_each_item_once_in_order(listing: tuple[str, Fetch]) -> None:
    _, fetch = listing
    whole = fetch(1000, None)
    assert whole.next_cursor is None
    # repr: a record holding NaN is not equal to itself
    expected = [repr(item) for item in whole.items]
    assert len(expected) >= 7
    for limit in [1, 2, 3, len(expected) - 1, len(expected)]:
        def page(cursor: str | None, limit: int = limit) -> Page[Any]:
            return fetch(limit, cursor)

        walked = pages(page)
        assert [len(page.items) for page in walked[:-1]] == [limit] * (len(walked) - 1)
        assert [repr(item) for page in walked for item in page.items] == expected


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused(listing: tuple[str, Fetch], limit: int) -> None:
    _, fetch = listing
    with pytest.raises(ValueError, match=f"limit must be an integer >= 1, got {limit}"):
        fetch(limit, None)


@pytest.mark.parametrize("cursor", ["not a cursor", "e30", "eyJsIjogMX0", ""])
def test_a_malformed_cursor_is_refused_naming_it(listing: tuple[str, Fetch], cursor: str) -> None:
    _, fetch = listing
    with pytest.raises(ValueError, match=f"cursor {cursor!r}"):
        fetch(2, cursor)


def test_a_cursor_of_another_listing_is_refused(listing: tuple[str, Fetch], store: Store) -> None:
    name, fetch = listing
    other = "list_model_versions" if name == "list_experiments" else "list_experiments"
    foreign = LISTINGS[other](store)(1, None).next_cursor
    assert foreign is not None
    with pytest.raises(ValueError, match=f"was not made by {name}"):
        fetch(2, foreign)
