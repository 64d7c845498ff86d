"""`PipelineRunStore`: pipeline runs, their steps' attempts, the cache lookup."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from trainforge.entities import PipelineRunStatus, StepState
from trainforge.errors import Ambiguous, Conflict, NotFound
from trainforge.storage import Store


def test_a_pipeline_run_round_trips_and_ends(pipeline_runs: Store) -> None:
    created = pipeline_runs.create_pipeline_run("pr1", "p", {"python": "m:pipe"},
                                                {"use_cache": True}, run_id=None)
    assert (created.status, created.source, created.options, created.ended_at) == (
        PipelineRunStatus.RUNNING, {"python": "m:pipe"}, {"use_cache": True}, None)
    assert created.started_at.tzinfo == timezone.utc
    ended = pipeline_runs.set_pipeline_run_status("pr1", PipelineRunStatus.FAILED)
    assert ended.status is PipelineRunStatus.FAILED and ended.ended_at is not None
    again = pipeline_runs.set_pipeline_run_status("pr1", PipelineRunStatus.RUNNING)
    assert again.ended_at is None
    assert pipeline_runs.get_pipeline_run("pr1") == again


def test_a_pipeline_run_needs_its_pipeline_and_a_free_id(pipeline_runs: Store) -> None:
    with pytest.raises(NotFound, match="pipeline 'nope' not found"):
        pipeline_runs.create_pipeline_run("pr1", "nope", {}, {})
    pipeline_runs.create_pipeline_run("pr1", "p", {}, {})
    with pytest.raises(Conflict, match="pipeline run 'pr1' exists already"):
        pipeline_runs.create_pipeline_run("pr1", "q", {}, {})
    with pytest.raises(NotFound, match="pipeline run 'zz' not found"):
        pipeline_runs.get_pipeline_run("zz")


def test_a_pipeline_run_is_found_by_a_unique_prefix(pipeline_runs: Store) -> None:
    for run_id in ("abc1", "abc2", "bcd1"):
        pipeline_runs.create_pipeline_run(run_id, "p", {}, {})
    assert pipeline_runs.find_pipeline_run("bc").pipeline_run_id == "bcd1"
    assert pipeline_runs.find_pipeline_run("abc2").pipeline_run_id == "abc2"
    with pytest.raises(Ambiguous, match="abc1, abc2"):
        pipeline_runs.find_pipeline_run("abc")
    with pytest.raises(NotFound):
        pipeline_runs.find_pipeline_run("x")


def test_pipeline_runs_are_listed_newest_first_by_pipeline_and_status(
        pipeline_runs: Store) -> None:
    for run_id, pipeline in (("a", "p"), ("b", "q"), ("c", "p"), ("d", "p")):
        pipeline_runs.create_pipeline_run(run_id, pipeline, {}, {})
        time.sleep(0.002)  # distinct start times: the order is by start, not by id
    pipeline_runs.set_pipeline_run_status("c", PipelineRunStatus.FAILED)

    def ids(**filters: Any) -> list[str]:
        return [r.pipeline_run_id for r in pipeline_runs.list_pipeline_runs(**filters).items]

    assert ids() == ["d", "c", "b", "a"]
    assert ids(pipeline_id="p") == ["d", "c", "a"]
    assert ids(pipeline_id="p", status=PipelineRunStatus.RUNNING) == ["d", "a"]
    assert ids(status=PipelineRunStatus.FAILED) == ["c"]
    assert ids(pipeline_id="nope") == []
    first = pipeline_runs.list_pipeline_runs(pipeline_id="p", limit=1)
    with pytest.raises(ValueError, match="cursor .* other arguments"):
        pipeline_runs.list_pipeline_runs(pipeline_id="q", cursor=first.next_cursor)


def test_step_attempts_keep_their_order_states_and_fields(pipeline_runs: Store) -> None:
    pipeline_runs.create_pipeline_run("pr1", "p", {}, {})
    first = pipeline_runs.add_step_run("pr1", "load", 1, StepState.PENDING)
    second = pipeline_runs.add_step_run("pr1", "scale", 1, StepState.PENDING)
    started = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    pipeline_runs.update_step_run(first.step_run_id, StepState.RUNNING, started_at=started,
                                  cache_key="k" * 64, cache_parts={"code": {"a.py": "1"}})
    pipeline_runs.update_step_run(first.step_run_id, StepState.SUCCEEDED,
                                  ended_at=started + timedelta(seconds=2),
                                  outputs={"frame": {"codec": "json", "digest": "d", "size": 1}})
    pipeline_runs.update_step_run(second.step_run_id, StepState.FAILED, error="boom")
    listed = pipeline_runs.list_step_runs("pr1")
    assert [(a.step, a.attempt, a.state) for a in listed] == [
        ("load", 1, StepState.SUCCEEDED), ("scale", 1, StepState.FAILED)]
    assert listed[0].started_at == started  # kept when a later update leaves it out
    assert listed[0].cache_parts == {"code": {"a.py": "1"}}
    assert listed[0].outputs["frame"]["digest"] == "d"
    assert listed[1].error == "boom"
    with pytest.raises(NotFound):
        pipeline_runs.add_step_run("nope", "load", 1, StepState.PENDING)
    with pytest.raises(NotFound):
        pipeline_runs.update_step_run(10_000, StepState.FAILED)


def test_the_cache_finds_the_newest_succeeded_execution_of_a_key(pipeline_runs: Store) -> None:
    pipeline_runs.create_pipeline_run("pr1", "p", {}, {})
    older = pipeline_runs.add_step_run("pr1", "s", 1, StepState.RUNNING)
    newer = pipeline_runs.add_step_run("pr1", "s", 2, StepState.RUNNING)
    failed = pipeline_runs.add_step_run("pr1", "s", 3, StepState.RUNNING)
    copy = pipeline_runs.add_step_run("pr1", "s", 4, StepState.RUNNING)
    now = datetime.now(timezone.utc)
    for row, state in ((older, StepState.SUCCEEDED), (newer, StepState.SUCCEEDED),
                       (failed, StepState.FAILED), (copy, StepState.CACHED)):
        pipeline_runs.update_step_run(row.step_run_id, state, cache_key="k", ended_at=now)
    found = pipeline_runs.find_cached("k")
    assert found is not None and found.step_run_id == newer.step_run_id
    assert pipeline_runs.find_cached("k", newer_than=now + timedelta(seconds=1)) is None
    assert pipeline_runs.find_cached("other") is None


def test_the_previous_execution_is_of_the_same_step_and_pipeline(pipeline_runs: Store) -> None:
    pipeline_runs.create_pipeline_run("pr1", "p", {}, {})
    pipeline_runs.create_pipeline_run("pr2", "q", {}, {})
    mine = pipeline_runs.add_step_run("pr1", "s", 1, StepState.RUNNING)
    pipeline_runs.update_step_run(mine.step_run_id, StepState.SUCCEEDED, cache_key="a")
    other = pipeline_runs.add_step_run("pr2", "s", 1, StepState.RUNNING)
    pipeline_runs.update_step_run(other.step_run_id, StepState.SUCCEEDED, cache_key="b")
    later = pipeline_runs.add_step_run("pr1", "s", 2, StepState.RUNNING)
    previous = pipeline_runs.previous_step_run("p", "s", later.step_run_id)
    assert previous is not None and previous.step_run_id == mine.step_run_id
    assert pipeline_runs.previous_step_run("p", "s", mine.step_run_id) is None
