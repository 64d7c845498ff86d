"""`RunStore`: the run lifecycle, user data apart from system state, liveness, listing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from contract_helpers import MISSING, RUN_MISSING, ids, new_run, pages

from trainforge.entities import DataVersion, ModelStage, Pipeline, RunStatus
from trainforge.errors import Ambiguous, Conflict, NotFound
from trainforge.storage import RunStore, Store

# lifecycle


def test_run_lifecycle_merges_tags(runs: RunStore, store: Store) -> None:
    run = new_run(store, git_commit="abc123", git_dirty=True)
    assert run.status is RunStatus.RUNNING
    assert (run.metrics, run.tags, run.ended_at, run.duration_s) == ({}, {}, None, None)
    assert (run.git_commit, run.git_dirty, run.error) == ("abc123", True, None)
    assert run.heartbeat_at == run.started_at

    runs.set_tags(run.run_id, {"team": "vision", "try": 1})
    runs.set_tags(run.run_id, {"try": 2})
    ended = runs.end_run(run.run_id, RunStatus.COMPLETED)

    assert ended.tags == {"team": "vision", "try": 2}
    assert ended.status is RunStatus.COMPLETED
    assert ended.ended_at is not None and ended.duration_s is not None and ended.duration_s >= 0
    assert runs.get_run(run.run_id) == ended


def test_end_run_failed_keeps_error_and_given_time(runs: RunStore, run_id: str) -> None:
    at = datetime(2030, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    ended = runs.end_run(run_id, RunStatus.FAILED, error="NaN loss at step 7", ended_at=at)
    assert (ended.status, ended.error) == (RunStatus.FAILED, "NaN loss at step 7")
    assert ended.ended_at == at and ended.ended_at.tzinfo == timezone.utc
    assert runs.get_run(run_id).ended_at == at


def test_a_pruned_run_is_its_own_status_found_by_status(runs: RunStore, run_id: str) -> None:
    ended = runs.end_run(run_id, RunStatus.PRUNED, error="pruned at step 40 (objective 0.61)")
    assert ended.status is RunStatus.PRUNED and ended.status.is_terminal
    assert [run.run_id for run in runs.list_runs(status=RunStatus.PRUNED).items] == [run_id]
    assert [run.run_id for run in runs.search_runs(filter="status = 'pruned'").items] == [run_id]
    assert runs.list_runs(status=RunStatus.FAILED).items == ()


def test_reopen_run_makes_an_ended_run_running_again(runs: RunStore, run_id: str) -> None:
    runs.end_run(run_id, RunStatus.PREEMPTED, error="preempted by SIGTERM")
    reopened = runs.reopen_run(run_id)
    assert (reopened.status, reopened.ended_at, reopened.error) == (RunStatus.RUNNING, None, None)
    assert reopened.heartbeat_at is not None and reopened.heartbeat_at >= reopened.started_at
    assert runs.get_run(run_id) == reopened


def test_the_launchers_of_a_job_reopen_a_run_once_and_another_job_conflicts(
        runs: RunStore, run_id: str) -> None:
    runs.end_run(run_id, RunStatus.FAILED, error="node lost")
    first = runs.reopen_run(run_id, job="node0:29500/job-2")
    assert (first.status, first.error, first.system["job"]) == (
        RunStatus.RUNNING, None, "node0:29500/job-2")
    runs.heartbeat(run_id)
    joined = runs.reopen_run(run_id, job="node0:29500/job-2")
    assert joined.heartbeat_at == runs.get_run(run_id).heartbeat_at  # as it was: not reopened
    assert joined.system == first.system
    with pytest.raises(Conflict, match=r"running for another job \(node0:29500/job-2\)"):
        runs.reopen_run(run_id, job="node0:29500/job-3")
    runs.end_run(run_id, RunStatus.PREEMPTED)
    assert runs.reopen_run(run_id, job="node0:29500/job-3").system["job"] == "node0:29500/job-3"


def test_create_run_with_a_taken_id_conflicts(store: Store) -> None:
    run = new_run(store, run_id="my-run")
    assert run.run_id == "my-run"
    with pytest.raises(Conflict, match="run 'my-run' already exists"):
        new_run(store, run_id="my-run")


def test_nested_json_round_trips(runs: RunStore, experiment_id: str) -> None:
    params = {"model": {"layers": [64, 32], "act": "relu", "dropout": None},
              "optim": {"lr": 1e-3, "betas": [0.9, 0.999]}, "flags": [True, False], "name": "é"}
    run = runs.create_run(experiment_id, params, {"gpus": [{"name": "A100"}]}, "file:///x")
    stored = runs.get_run(run.run_id)
    assert stored.params == params
    assert stored.environment == {"gpus": [{"name": "A100"}]}


def test_datetimes_are_timezone_aware_utc(runs: RunStore, store: Store) -> None:
    before = datetime.now(timezone.utc)
    run = runs.end_run(new_run(store).run_id, RunStatus.COMPLETED)
    model = store.create_model_version("m", run.run_id, "file:///m", ModelStage.NONE, {})
    stored = runs.get_run(run.run_id)
    for moment in [stored.started_at, stored.ended_at, stored.heartbeat_at, model.created_at]:
        assert moment is not None and moment.tzinfo == timezone.utc
        assert before <= moment <= datetime.now(timezone.utc)


def test_log_params_merges_top_level_keys(runs: RunStore, store: Store) -> None:
    run = new_run(store, params={"a": 1, "b": {"c": 2}})
    runs.log_params(run.run_id, {"b": {"d": 3}, "e": [1]})
    assert runs.get_run(run.run_id).params == {"a": 1, "b": {"d": 3}, "e": [1]}


def test_set_data_version_links_a_stored_version(runs: RunStore, store: Store,
                                                 run_id: str) -> None:
    store.put_data_version(DataVersion("d1", "file:///data", (), 0))
    runs.set_data_version(run_id, "d1")
    assert runs.get_run(run_id).data_version_id == "d1"
    with pytest.raises(NotFound, match="data version 'd2' not found"):
        runs.set_data_version(run_id, "d2")


# system state apart from user data


def test_a_run_starts_with_the_system_state_it_was_created_with(
    runs: RunStore, experiment_id: str
) -> None:
    plain = runs.create_run(experiment_id, {}, {}, "file:///a")
    assert (plain.system, plain.spec_hash) == ({}, None)
    system = {"spec": {"path": "/p/pipeline.yaml", "overrides": ["training.epochs=2"]}}
    run = runs.create_run(experiment_id, {"lr": 0.1}, {}, "file:///a", tags={"team": "risk"},
                          system=system, spec_hash="f" * 64)
    stored = runs.get_run(run.run_id)
    assert stored == run
    assert (stored.system, stored.spec_hash) == (system, "f" * 64)
    assert (stored.params, stored.tags) == ({"lr": 0.1}, {"team": "risk"})


def test_set_system_merges_top_level_keys_apart_from_params_and_tags(
    runs: RunStore, store: Store
) -> None:
    run = new_run(store, params={"process": "user"}, tags={"process": "user"},
                  system={"spec": {"path": "a.yaml"}})
    runs.set_system(run.run_id, {"process": {"host": "h1", "pid": 1}})
    runs.set_system(run.run_id, {"process": {"host": "h2", "pid": 2},
                                 "checkpoint": {"location": "s3://b/ckpt"}})
    stored = runs.get_run(run.run_id)
    assert stored.system == {"spec": {"path": "a.yaml"}, "process": {"host": "h2", "pid": 2},
                             "checkpoint": {"location": "s3://b/ckpt"}}
    assert (stored.params, stored.tags) == ({"process": "user"}, {"process": "user"})
    runs.set_tags(run.run_id, {"process": "still the user's"})
    assert runs.get_run(run.run_id).system["process"] == {"host": "h2", "pid": 2}


@pytest.mark.parametrize("spec_hash", ["", "x" * 65])
def test_a_spec_hash_must_be_1_to_64_characters(
    runs: RunStore, experiment_id: str, spec_hash: str
) -> None:
    with pytest.raises(ValueError, match="spec_hash must be 1 to 64 characters"):
        runs.create_run(experiment_id, {}, {}, "file:///a", spec_hash=spec_hash)
    assert runs.list_runs().items == ()


# listing


def test_find_run_takes_a_whole_id_or_a_unique_prefix(runs: RunStore, store: Store) -> None:
    for run_id in ["abc", "abcdef", "abd012", "Abe", "x%y_z"]:
        new_run(store, run_id=run_id)
    assert runs.find_run("abc").run_id == "abc"  # an exact id wins over longer ids it starts
    assert runs.find_run("abcd").run_id == "abcdef"
    assert runs.find_run("abd").run_id == "abd012"
    assert runs.find_run("A").run_id == "Abe"  # case matters
    assert runs.find_run("x%").run_id == "x%y_z"  # no wildcards
    store.set_summary_metrics("abd012", {"auc": 0.5})
    assert runs.find_run("abd0").metrics == {"auc": 0.5}
    with pytest.raises(NotFound, match="run 'x_' not found"):
        runs.find_run("x_")
    with pytest.raises(NotFound, match="run 'abe' not found"):
        runs.find_run("abe")


def test_an_ambiguous_prefix_lists_candidates(runs: RunStore, store: Store) -> None:
    for run_id in ["abc", "abd"] + [f"ff{i}" for i in range(7)]:
        new_run(store, run_id=run_id)
    with pytest.raises(Ambiguous) as raised:
        runs.find_run("ab")
    assert raised.value.candidates == ["abc", "abd"]
    assert str(raised.value) == ("run id 'ab' is ambiguous: 2 runs start with it (abc, abd); "
                                 "give more of the id")
    with pytest.raises(Ambiguous, match=r"7 runs start with it \(ff0, ff1, ff2, ff3, ff4, "
                                        r"and 2 more\)") as many:
        runs.find_run("f")
    assert len(many.value.candidates) == 5
    with pytest.raises(ValueError, match="must not be empty"):
        runs.find_run("")


def test_list_runs_filters_newest_first(runs: RunStore, store: Store) -> None:
    a = [new_run(store, "a") for _ in range(3)]
    b = [new_run(store, "b") for _ in range(2)]
    runs.end_run(a[0].run_id, RunStatus.COMPLETED)
    exp_a = store.get_or_create_experiment("a").experiment_id

    assert ids(runs.list_runs().items) == ids(reversed(a + b))
    assert ids(runs.list_runs(exp_a).items) == ids(reversed(a))
    assert ids(runs.list_runs(status=RunStatus.COMPLETED).items) == [a[0].run_id]
    assert ids(runs.list_runs(exp_a, status=RunStatus.RUNNING).items) == [a[2].run_id,
                                                                          a[1].run_id]
    assert ids(runs.list_runs(limit=2).items) == [b[1].run_id, b[0].run_id]


def test_list_runs_filters_by_pipeline_and_spec_hash(runs: RunStore, store: Store) -> None:
    for pipeline_id in ["fraud", "churn"]:
        store.upsert_pipeline(Pipeline(pipeline_id, pipeline_id, {}))
    same = [new_run(store, pipeline_id="fraud", spec_hash="1" * 64) for _ in range(2)]
    other_spec = new_run(store, pipeline_id="fraud", spec_hash="2" * 64)
    other_pipeline = new_run(store, pipeline_id="churn", spec_hash="1" * 64)
    new_run(store)

    assert ids(runs.list_runs(pipeline_id="fraud").items) == ids([other_spec, *same[::-1]])
    assert ids(runs.list_runs(spec_hash="1" * 64).items) == ids([other_pipeline, *same[::-1]])
    both = runs.list_runs(pipeline_id="fraud", spec_hash="1" * 64)
    assert ids(both.items) == ids(same[::-1])
    assert runs.list_runs(spec_hash="3" * 64).items == ()


def test_list_runs_pages_are_stable_while_newer_runs_start(runs: RunStore, store: Store) -> None:
    older = [new_run(store) for _ in range(7)]
    listed = []

    def fetch(cursor: str | None) -> Any:
        page = runs.list_runs(limit=3, cursor=cursor)
        listed.extend(page.items)
        new_run(store)  # a newer run starts between two pages
        return page

    walked = pages(fetch)
    assert [len(page.items) for page in walked] == [3, 3, 1]
    assert ids(listed) == ids(reversed(older))


# liveness


def test_heartbeats_add_device_hours_and_stale_runs_are_crashed(
    runs: RunStore, store: Store
) -> None:
    stale, alive, done = new_run(store), new_run(store), new_run(store)
    runs.end_run(done.run_id, RunStatus.COMPLETED)
    runs.heartbeat(alive.run_id, device_hours=0.25)
    runs.heartbeat(alive.run_id, device_hours=0.5)
    beat = runs.get_run(alive.run_id)
    assert beat.device_hours == 0.75 and beat.heartbeat_at is not None
    cutoff = beat.heartbeat_at - timedelta(microseconds=1)
    crashed = runs.mark_crashed(cutoff)
    assert ids(crashed) == [stale.run_id]
    assert crashed[0].status is RunStatus.CRASHED
    assert crashed[0].error is not None and "no heartbeat since" in crashed[0].error
    assert crashed[0].ended_at == runs.get_run(stale.run_id).heartbeat_at
    assert runs.get_run(alive.run_id).status is RunStatus.RUNNING
    assert runs.get_run(done.run_id).status is RunStatus.COMPLETED
    assert runs.mark_crashed(cutoff) == []
    runs.heartbeat(stale.run_id)  # it was alive after all
    revived = runs.get_run(stale.run_id)
    assert (revived.status, revived.ended_at, revived.error) == (RunStatus.RUNNING, None, None)


def test_negative_device_hours_are_refused(runs: RunStore, run_id: str) -> None:
    with pytest.raises(ValueError, match="device_hours must be >= 0"):
        runs.heartbeat(run_id, -1.0)
    assert runs.get_run(run_id).device_hours == 0.0
    future = datetime.now(timezone.utc) + timedelta(days=1)
    assert ids(runs.mark_crashed(future)) == [run_id]


# missing ids


NOT_FOUND_CASES: dict[str, tuple[Callable[[RunStore], Any], str]] = {
    "get_run": (lambda s: s.get_run(MISSING), RUN_MISSING),
    "log_params": (lambda s: s.log_params(MISSING, {}), RUN_MISSING),
    "set_tags": (lambda s: s.set_tags(MISSING, {}), RUN_MISSING),
    "set_system": (lambda s: s.set_system(MISSING, {}), RUN_MISSING),
    "set_data_version": (lambda s: s.set_data_version(MISSING, MISSING),
                         f"data version '{MISSING}' not found"),
    "end_run": (lambda s: s.end_run(MISSING, RunStatus.FAILED), RUN_MISSING),
    "reopen_run": (lambda s: s.reopen_run(MISSING), RUN_MISSING),
    "heartbeat": (lambda s: s.heartbeat(MISSING), RUN_MISSING),
    "create_run": (lambda s: s.create_run(MISSING, {}, {}, "u"),
                   f"experiment '{MISSING}' not found"),
}


@pytest.mark.parametrize(("call", "message"), NOT_FOUND_CASES.values(), ids=NOT_FOUND_CASES.keys())
def test_missing_ids_raise_not_found_naming_them(
    runs: RunStore, call: Callable[[RunStore], Any], message: str
) -> None:
    with pytest.raises(NotFound) as raised:
        call(runs)
    assert str(raised.value) == message


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"pipeline_id": "nope"}, "pipeline 'nope' not found"),
    ({"parent_run_id": MISSING}, f"parent run '{MISSING}' not found"),
])
def test_create_run_with_a_missing_pipeline_or_parent_raises_not_found(
    runs: RunStore, experiment_id: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(NotFound) as raised:
        runs.create_run(experiment_id, {}, {}, "file:///a", **kwargs)
    assert str(raised.value) == message
    assert runs.list_runs().items == ()
