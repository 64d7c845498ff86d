"""`RunStore.search_runs`: the query language over metrics, params, tags and system state, in
keyset pages for every sort."""

from __future__ import annotations

import math
from typing import Any

import pytest
from contract_helpers import ids, new_run, pages

from trainforge.entities import Run, RunStatus
from trainforge.errors import QueryError
from trainforge.storage import Page, RunStore, Store, all_items


@pytest.fixture
def population(store: Store) -> list[Run]:
    """Six runs in two experiments with metrics, nested params, tags and system state."""
    specs = [
        ("fraud", 0.95, 1e-4, "adamw", "risk"), ("fraud", 0.91, 1e-2, "sgd", "risk"),
        ("fraud", 0.80, 5e-4, "adamw", "growth"), ("fraud", None, 1e-4, "adamw", None),
        ("churn", 0.99, 1e-4, "adamw", "risk"), ("churn", math.nan, "auto", "adamw", "risk"),
    ]
    made = []
    for number, (experiment, auc, lr, optimizer, team) in enumerate(specs):
        run = new_run(store, experiment,
                      {"training": {"optimizer": {"lr": lr, "name": optimizer}}},
                      tags={"team": team} if team else {},
                      system={"process": {"host": f"node{number % 2}", "pid": number}})
        if auc is not None:
            store.set_summary_metrics(run.run_id, {"test_auc": auc})
        made.append(run)
    store.end_run(made[0].run_id, RunStatus.COMPLETED)
    return made


def test_filters_on_metrics_params_tags_and_attributes(
    runs: RunStore, store: Store, population: list[Run]
) -> None:
    r = population
    fraud = store.get_or_create_experiment("fraud").experiment_id

    def search(experiment_ids: list[str] | None = None, filter: str | None = None) -> set[str]:
        return set(ids(runs.search_runs(experiment_ids, filter).items))

    assert search(filter="metrics.test_auc > 0.9") == {r[0].run_id, r[1].run_id, r[4].run_id}
    assert search([fraud], "metrics.test_auc > 0.9 and params.training.optimizer.lr < 1e-3") \
        == {r[0].run_id}
    assert search(filter="params.training.optimizer.name = 'sgd'") == {r[1].run_id}
    # a string param never matches a number and a number never matches a string
    assert search(filter="params.training.optimizer.lr = 'auto'") == {r[5].run_id}
    assert r[5].run_id not in search(filter="params.training.optimizer.lr < 1")
    assert search(filter="tags.team = 'growth'") == {r[2].run_id}
    assert search(filter="tags.team != 'risk'") == {r[2].run_id}
    assert search(filter="status = 'completed'") == {r[0].run_id}
    assert search(filter="experiment = 'churn'") == {r[4].run_id, r[5].run_id}
    assert search(filter="params.missing.path > 0") == set()


def test_or_parentheses_and_status(runs: RunStore, store: Store, population: list[Run]) -> None:
    r = population
    store.end_run(r[1].run_id, RunStatus.FAILED, "boom")

    def search(filter: str) -> set[str]:
        return set(ids(runs.search_runs(filter=filter).items))

    assert search("status = 'failed'") == {r[1].run_id}
    assert search("tags.team = 'growth' or metrics.test_auc > 0.95") == {r[2].run_id, r[4].run_id}
    assert search("(tags.team = 'risk' or tags.team = 'growth') and experiment = 'fraud'") == {
        r[0].run_id, r[1].run_id, r[2].run_id}
    # "and" binds tighter than "or"
    assert search("tags.team = 'growth' or tags.team = 'risk' and metrics.test_auc > 0.92") == {
        r[2].run_id, r[0].run_id, r[4].run_id}
    assert search("status = 'failed' or status = 'completed' or params.x.y = 1") == {
        r[0].run_id, r[1].run_id}


def test_booleans_match_only_booleans(runs: RunStore, store: Store, population: list[Run]) -> None:
    r = population
    for run, passed in [(r[0], True), (r[1], False), (r[2], "false"), (r[3], 0)]:
        store.set_tags(run.run_id, {"gates": {"passed": passed, "failures": []}})

    def search(filter: str) -> set[str]:
        return set(ids(runs.search_runs(filter=filter).items))

    assert search("tags.gates.passed = false") == {r[1].run_id}
    assert search("tags.gates.passed = true") == {r[0].run_id}
    assert search("tags.gates.passed != true") == {r[1].run_id}  # not the string, nor 0
    assert search("tags.gates.passed = 'false'") == {r[2].run_id}
    assert search("tags.gates.passed = 0") == {r[3].run_id}
    assert search("tags.gates.passed = false or tags.gates.passed = 0") == {
        r[1].run_id, r[3].run_id}


def test_filters_and_sorts_on_system_state(runs: RunStore, population: list[Run]) -> None:
    r = population
    on_node1 = runs.search_runs(filter="system.process.host = 'node1'",
                                sort="-system.process.pid")
    assert ids(on_node1.items) == [r[5].run_id, r[3].run_id, r[1].run_id]
    assert runs.search_runs(filter="params.process.host = 'node1'").items == ()


def test_sorts_put_missing_values_last_and_break_ties_newest_first(
    runs: RunStore, population: list[Run]
) -> None:
    r = population

    def sorted_ids(sort: str, limit: int = 100) -> list[str]:
        return ids(runs.search_runs(sort=sort, limit=limit).items)

    by_auc = sorted_ids("-metrics.test_auc")
    assert by_auc[:4] == [r[4].run_id, r[0].run_id, r[1].run_id, r[2].run_id]
    assert set(by_auc[4:]) == {r[3].run_id, r[5].run_id}  # no value, NaN
    assert sorted_ids("metrics.test_auc", limit=2) == [r[2].run_id, r[1].run_id]
    by_lr = sorted_ids("params.training.optimizer.lr,-metrics.test_auc")
    assert by_lr[:3] == [r[4].run_id, r[0].run_id, r[3].run_id]  # 1e-4 ties by auc desc
    assert sorted_ids("tags.team", limit=1) == [r[2].run_id]  # 'growth'
    newest_first = ids(reversed(r))
    assert ids(runs.search_runs().items) == ids(runs.list_runs().items) == newest_first
    assert sorted_ids("-started_at") == newest_first


# Missing values, NaN, ties, mixed number / string params, nullable times: every kind of key.
SORTS = ["", "-metrics.test_auc", "metrics.test_auc", "params.training.optimizer.lr",
         "-params.training.optimizer.lr,tags.team", "tags.team,-metrics.test_auc", "status",
         "-ended_at", "ended_at,run_id", "-system.process.pid"]


@pytest.mark.parametrize("sort", SORTS)
def test_every_sort_pages_through_each_run_once_in_order(
    runs: RunStore, population: list[Run], sort: str
) -> None:
    whole = ids(runs.search_runs(sort=sort, limit=100).items)
    assert sorted(whole) == sorted(ids(population))
    for limit in [1, 2, 4]:
        def fetch(cursor: str | None, limit: int = limit) -> Page[Run]:
            return runs.search_runs(sort=sort, limit=limit, cursor=cursor)

        walked = pages(fetch)
        assert all(len(page.items) == limit for page in walked[:-1])
        assert 0 < len(walked[-1].items) <= limit
        assert [run_id for page in walked for run_id in ids(page.items)] == whole


@pytest.mark.parametrize("filter", [
    "tags.team = 'risk'",
    "tags.team = 'risk' or tags.team = 'growth' or experiment = 'churn'",
    "(tags.team = 'risk' or status = 'completed') and (metrics.test_auc > 0.5 or tags.x = true)",
])
def test_a_filtered_search_pages_through_its_matches(
    runs: RunStore, population: list[Run], filter: str
) -> None:
    r = population
    expected = {
        "tags.team = 'risk'": [r[4], r[0], r[1], r[5]],
        "tags.team = 'risk' or tags.team = 'growth' or experiment = 'churn'":
            [r[4], r[0], r[1], r[2], r[5]],
        "(tags.team = 'risk' or status = 'completed') and (metrics.test_auc > 0.5 or tags.x = "
        "true)": [r[4], r[0], r[1]],
    }[filter]
    matches = all_items(lambda cursor: runs.search_runs(
        filter=filter, sort="-metrics.test_auc", limit=1, cursor=cursor))
    assert ids(matches) == ids(expected)


def test_a_cursor_is_refused_by_a_search_with_other_arguments(
    runs: RunStore, population: list[Run]
) -> None:
    cursor = runs.search_runs(sort="-metrics.test_auc", limit=2).next_cursor
    assert cursor is not None
    for other in [{"sort": "metrics.test_auc"},
                  {"sort": "-metrics.test_auc", "filter": "status = 'running'"}]:
        with pytest.raises(ValueError, match="with other arguments"):
            runs.search_runs(cursor=cursor, **other)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"filter": "metrics.auc >"}, QueryError, "expected a number, a quoted string, true or"),
    ({"filter": "(metrics.auc > 1"}, QueryError, "at position 16: expected 'and', 'or' or '\\)'"),
    ({"sort": "-bogus"}, QueryError, "cannot sort by 'bogus'"),
    ({"limit": 0}, ValueError, "limit must be an integer >= 1"),
    ({"cursor": "bogus"}, ValueError, "cursor 'bogus' is malformed"),
])
def test_bad_search_arguments_are_refused(
    runs: RunStore, kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        runs.search_runs(**kwargs)


def test_search_pages_are_stable_while_newer_runs_start(
    runs: RunStore, store: Store, population: list[Run]
) -> None:
    listed: list[Run] = []

    def fetch(cursor: str | None) -> Any:
        page = runs.search_runs(filter="experiment = 'fraud'", limit=3, cursor=cursor)
        listed.extend(page.items)
        new_run(store, "fraud")
        return page

    pages(fetch)
    assert ids(listed) == ids(reversed(population[:4]))
