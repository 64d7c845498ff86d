"""`collect_values`: the values only old pipeline runs name are deleted; those a running or
recent pipeline run names (shared ones included), and those no step run names, are kept."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import runner_steps as rs

from trainforge.entities import Pipeline, StepState
from trainforge.orchestration import Dag, InProcessRunner, RunOptions, ValueStore
from trainforge.orchestration.gc import collect_values
from trainforge.orchestration.steps import StepDeclaration, make_step
from trainforge.storage import Store
from trainforge.storage.objects import open_object_store


@pytest.fixture
def values(tmp_path: Path) -> ValueStore:
    return ValueStore(open_object_store(tmp_path / "values"))


def _numbers(count: int) -> Dag:
    return Dag("p", (make_step(rs.numbers, StepDeclaration(outputs=("frame",),
                                                       params={"count": count})),
                     make_step(rs.total, StepDeclaration(outputs=("sum",)))))


def test_only_values_that_only_old_pipeline_runs_name_are_deleted(
        store: Store, values: ValueStore) -> None:
    store.upsert_pipeline(Pipeline("p", "p", {}))
    runner = InProcessRunner(store, values)
    old = runner.run(_numbers(3), options=RunOptions(use_cache=False))
    shared = runner.run(_numbers(4), options=RunOptions(use_cache=False))  # old, too
    between = datetime.now(timezone.utc)
    recent = runner.run(_numbers(4), options=RunOptions(use_cache=False))  # the same values
    running = store.create_pipeline_run("still-running", "p", {}, {})
    kept_by_running = values.put({"being": "used"})
    step = store.add_step_run(running.pipeline_run_id, "s", 1, StepState.SUCCEEDED)
    store.update_step_run(step.step_run_id, StepState.SUCCEEDED,
                          outputs={"x": kept_by_running.to_json(), "y": {"memory": "Model"}})
    unnamed = values.put({"no": "step run"})
    everything = set(values.objects.list("values"))
    old_keys = {ref.key for ref in old.refs.values()}
    assert old_keys and not old_keys & {ref.key for ref in recent.refs.values()}

    dry = collect_values(store, values, timedelta(0), dry_run=True, now=between)
    assert set(dry.deleted) == old_keys  # `shared`'s values are `recent`'s too
    assert shared.refs == recent.refs
    assert set(values.objects.list("values")) == everything  # nothing deleted

    collected = collect_values(store, values, timedelta(0), now=between)
    assert set(collected.deleted) == old_keys
    assert collected.freed_bytes == sum(ref.size for ref in old.refs.values())
    assert collected.unnamed == 1
    left = set(values.objects.list("values"))
    assert left == everything - old_keys
    assert {unnamed.key, kept_by_running.key} <= left

    later = collect_values(store, values, timedelta(days=1), now=between + timedelta(days=2))
    assert set(later.deleted) == {ref.key for ref in recent.refs.values()}
    assert set(values.objects.list("values")) == {unnamed.key, kept_by_running.key}
    assert later.kept == 1 and later.unnamed == 1
