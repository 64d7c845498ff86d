"""`InProcessRunner`: states per attempt, retries with backoff, timeouts that kill the step's
process, parallel steps, failures that skip only what depends on them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import runner_steps as rs

from trainforge.entities import PipelineRunStatus, StepState
from trainforge.errors import PipelineFailed, Preempted
from trainforge.orchestration import (
    Dag,
    InProcessRunner,
    RetryPolicy,
    RunOptions,
    ValueStore,
)
from trainforge.orchestration.dag import StepOptions
from trainforge.orchestration.steps import StepDeclaration, make_step
from trainforge.storage import Store


def _dag(*steps, **options) -> Dag:
    return Dag("p", tuple(steps), **options)


def _step(fn, outputs=(), **options):
    wiring = {key: options.pop(key) for key in ("name", "inputs", "params") if key in options}
    return make_step(fn, StepDeclaration(outputs=tuple(outputs), **wiring,
                                         options=StepOptions(**options)))


def _runner(store: Store, values: ValueStore, **options) -> InProcessRunner:
    from trainforge.entities import Pipeline

    store.upsert_pipeline(Pipeline("p", "p", {}))
    return InProcessRunner(store, values, seed=0, **options)


def _attempts(store: Store, pipeline_run_id: str, step: str) -> list:
    return [a for a in store.list_step_runs(pipeline_run_id) if a.step == step]


def test_each_step_is_persisted_with_its_state_timings_and_outputs(
        store: Store, values: ValueStore) -> None:
    dag = _dag(_step(rs.numbers, ["frame"]), _step(rs.doubled, ["twice"]),
               _step(rs.total, ["sum"], inputs={"frame": "twice"}))
    outcome = _runner(store, values).run(dag)
    assert outcome.value("sum") == 12.0
    assert outcome.pipeline_run.status is PipelineRunStatus.SUCCEEDED
    stored = store.list_step_runs(outcome.pipeline_run.pipeline_run_id)
    assert [(a.step, a.attempt, a.state) for a in stored] == [
        ("numbers", 1, StepState.SUCCEEDED), ("doubled", 1, StepState.SUCCEEDED),
        ("total", 1, StepState.SUCCEEDED)]
    assert all(a.started_at <= a.ended_at and a.cache_key for a in stored)
    frame_ref = stored[0].outputs["frame"]
    assert frame_ref["codec"] == "parquet" and stored[1].cache_parts["inputs"] == {
        "frame": frame_ref["digest"]}


def test_transient_errors_are_retried_after_a_growing_jittered_backoff(
        sqlite_store: Store, values: ValueStore) -> None:
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    retry = RetryPolicy(attempts=3, backoff_s=0.2, jitter=0.25)
    dag = _dag(_step(rs.numbers, ["frame"]), _step(rs.flaky, ["n"], retry=retry))
    outcome = _runner(sqlite_store, values, sleep=sleep).run(dag)
    assert outcome.value("n") == 4.0
    attempts = _attempts(sqlite_store, outcome.pipeline_run.pipeline_run_id, "flaky")
    assert [(a.attempt, a.state) for a in attempts] == [
        (1, StepState.RETRYING), (2, StepState.RETRYING), (3, StepState.SUCCEEDED)]
    assert attempts[0].error.startswith("transient: s3://bucket/x: SlowDown")
    assert 0.15 <= slept[0] <= 0.25 and 0.3 <= slept[1] <= 0.5  # 0.2, then 0.4, +-25 %
    for failed, next_one in zip(attempts, attempts[1:]):
        waited = (next_one.started_at - failed.ended_at).total_seconds()
        assert waited >= slept[failed.attempt - 1] - 0.01


@pytest.mark.parametrize(("kind", "retry_on", "attempts"), [
    ("data", ("transient", "timeout", "error"), 1),  # a data error never retries
    ("error", ("transient", "timeout"), 1),  # a bug retries only when asked
    ("error", ("error",), 3),
])
def test_only_the_error_kinds_in_retry_on_are_retried(
        sqlite_store: Store, values: ValueStore, kind: str, retry_on: tuple[str, ...],
        attempts: int) -> None:
    retry = RetryPolicy(attempts=3, backoff_s=0.0, retry_on=retry_on)
    dag = _dag(_step(rs.numbers, ["frame"]),
               _step(rs.flaky, ["n"], retry=retry, params={"failures": 5, "kind": kind}))
    with pytest.raises(PipelineFailed, match="flaky") as raised:
        _runner(sqlite_store, values).run(dag)
    tried = _attempts(sqlite_store, raised.value.pipeline_run_id, "flaky")
    assert len(tried) == attempts and tried[-1].state is StepState.FAILED
    assert tried[-1].error.startswith(f"{kind}: ")


@pytest.mark.slow
def test_a_timeout_kills_the_steps_process_and_counts_as_a_failed_attempt(
        sqlite_store: Store, values: ValueStore, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    retry = RetryPolicy(attempts=2, backoff_s=0.0)
    dag = _dag(_step(rs.sleepy, ["pid"], params={"pid_file": str(pid_file)}, timeout_s=4.0,
                     retry=retry))
    started = time.monotonic()
    with pytest.raises(PipelineFailed, match="ran past its timeout of 4 s") as raised:
        _runner(sqlite_store, values).run(dag)
    assert time.monotonic() - started < 30  # two attempts of 4 s, not two of 60 s
    tried = _attempts(sqlite_store, raised.value.pipeline_run_id, "sleepy")
    assert [(a.attempt, a.state) for a in tried] == [(1, StepState.RETRYING),
                                                      (2, StepState.FAILED)]
    assert all(a.error.startswith("timeout: ") for a in tried)
    pid = int(pid_file.read_text())
    assert pid != os.getpid()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_step_with_a_timeout_gets_and_hands_on_values_through_the_value_store(
        sqlite_store: Store, values: ValueStore) -> None:
    dag = _dag(_step(rs.numbers, ["frame"]), _step(rs.where, ["where"], timeout_s=60.0),
               _step(rs.total, ["sum"]))
    outcome = _runner(sqlite_store, values).run(dag)
    assert outcome.value("where")["rows"] == 4
    assert outcome.value("where")["pid"] != os.getpid()


@pytest.mark.slow
def test_independent_steps_run_at_once_up_to_max_parallel(
        sqlite_store: Store, values: ValueStore) -> None:
    steps = [_step(rs.wait, [f"w{i}"], name=f"w{i}", params={"seconds": 1.0})
             for i in range(3)]
    runner = _runner(sqlite_store, values)

    def spans(max_parallel: int) -> list[tuple]:
        outcome = runner.run(_dag(*steps, max_parallel=max_parallel),
                             options=RunOptions(use_cache=False))
        return sorted((a.started_at, a.ended_at) for a in outcome.steps.values())

    def overlapping(found: list[tuple]) -> int:
        """The most steps running at one moment (each step's start)."""
        return max(sum(1 for s, e in found if s <= start < e) for start, _ in found)

    assert overlapping(spans(1)) == 1
    assert overlapping(spans(2)) == 2
    assert overlapping(spans(3)) == 3


def test_a_failed_step_skips_what_depends_on_it_and_not_the_rest(
        store: Store, values: ValueStore) -> None:
    dag = _dag(_step(rs.numbers, ["frame"]), _step(rs.broken, ["b"]),
               _step(rs.total, ["t"], inputs={"frame": "b"}, name="after_broken"),
               _step(rs.doubled, ["twice"]))
    with pytest.raises(PipelineFailed, match="broken: ValueError: broken on purpose") as raised:
        _runner(store, values).run(dag)
    record = store.get_pipeline_run(raised.value.pipeline_run_id)
    assert record.status is PipelineRunStatus.FAILED and record.ended_at is not None
    states = {a.step: a.state for a in store.list_step_runs(record.pipeline_run_id)}
    assert states == {"numbers": StepState.SUCCEEDED, "broken": StepState.FAILED,
                      "after_broken": StepState.SKIPPED, "doubled": StepState.SUCCEEDED}
    skipped = _attempts(store, record.pipeline_run_id, "after_broken")[0]
    assert skipped.error == "not run: broken did not succeed"


def test_a_preempted_step_stops_the_run_and_its_resume_runs_the_rest(
        store: Store, values: ValueStore) -> None:
    """The machine is going away: no other step starts, not even one that does not depend on
    the preempted step (with other errors such a step still runs, above)."""
    dag = _dag(_step(rs.numbers, ["frame"]), _step(rs.preempted, ["p"], name="audit"),
               _step(rs.doubled, ["twice"]), _step(rs.total, ["t"], inputs={"frame": "twice"}))
    runner = _runner(store, values)
    with pytest.raises(PipelineFailed, match="audit: preempted by SIGTERM") as raised:
        runner.run(dag)
    assert isinstance(raised.value.__cause__, Preempted)
    pipeline_run = raised.value.pipeline_run_id
    attempts = {a.step: a for a in store.list_step_runs(pipeline_run)}
    assert {step: a.state for step, a in attempts.items()} == {
        "numbers": StepState.SUCCEEDED, "audit": StepState.FAILED,
        "doubled": StepState.SKIPPED, "total": StepState.SKIPPED}
    assert attempts["doubled"].error == attempts["total"].error == "not run: audit was preempted"

    resumed = runner.run(dag.replacing(_step(rs.total, ["p"], name="audit")), resume=pipeline_run)
    last = {a.step: a for a in store.list_step_runs(pipeline_run)}
    assert {step: (a.attempt, a.state) for step, a in last.items()} == {
        "numbers": (1, StepState.SUCCEEDED), "audit": (2, StepState.SUCCEEDED),
        "doubled": (2, StepState.SUCCEEDED), "total": (2, StepState.SUCCEEDED)}
    assert resumed.value("t") == 2 * resumed.value("p")


class _Scaler:
    """A callable object as a step's function."""

    def __call__(self, frame, factor: float = 2.0):
        return frame * factor


def test_a_callable_object_is_a_step_and_its_call_is_hashed(
        store: Store, values: ValueStore) -> None:
    dag = _dag(_step(rs.numbers, ["frame"]), _step(_Scaler(), ["scaled"], name="scale"))
    outcome = _runner(store, values).run(dag)
    assert outcome.value("scaled")["x"].tolist() == [0, 2, 4, 6]
    code = outcome.steps["scale"].cache_parts["code"]
    assert any(label.endswith(":_Scaler.__call__") for label in code)


def test_builtins_and_partials_of_them_have_no_first_party_code() -> None:
    import functools

    from trainforge.orchestration.fingerprint import Fingerprinter

    for fn in (len, functools.partial(max, default=0), print):
        code, deps = Fingerprinter().code(fn)
        assert code == {} and set(deps) == {"python"}


def test_later_steps_take_the_object_produced_and_an_input_handed_on_is_not_stored_again(
        sqlite_store: Store, values: ValueStore, monkeypatch: pytest.MonkeyPatch) -> None:
    dag = _dag(_step(rs.numbers, ["frame"]), _step(rs.handed_on, ["same", "rows"]),
               _step(rs.is_same, ["identical"]))
    puts: list[str] = []
    put = ValueStore.put
    monkeypatch.setattr(ValueStore, "put",
                        lambda self, value, what="value": puts.append(what) or put(self, value,
                                                                                   what))
    outcome = _runner(sqlite_store, values).run(dag)
    assert outcome.value("identical") is True  # the frame itself, not decoded from the store
    assert outcome.refs["same"] == outcome.refs["frame"]
    assert puts == ["step 'numbers' output 'frame'", "step 'handed_on' output 'rows'",
                    "step 'is_same' output 'identical'"]


def test_on_start_hears_of_the_pipeline_run_once_its_row_is_written(
        sqlite_store: Store, values: ValueStore) -> None:
    """What a tracked run names as its pipeline run (`drive` records it then) can be read."""
    heard = []

    def on_start(record) -> None:
        stored = sqlite_store.get_pipeline_run(record.pipeline_run_id)
        heard.append((stored.status, [a.state for a in sqlite_store.list_step_runs(
            record.pipeline_run_id)]))

    runner = _runner(sqlite_store, values)
    outcome = runner.run(_dag(_step(rs.numbers, ["frame"])), on_start=on_start)
    assert heard == [(PipelineRunStatus.RUNNING, [])]
    runner.run(_dag(_step(rs.numbers, ["frame"])), resume=outcome.pipeline_run.pipeline_run_id,
               on_start=on_start)
    assert heard[1][0] is PipelineRunStatus.RUNNING
