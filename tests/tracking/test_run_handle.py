import signal
import subprocess
import sys
import textwrap
import time

import pytest

from trainforge.entities import RunStatus
from trainforge.errors import Conflict, NotFound, Pruned
from trainforge.storage import SqlStore
from trainforge.storage.artifacts import open_artifact_store
from trainforge.tracking import RunHandle, active_run, start_run


@pytest.fixture
def artifacts(tmp_path):
    return open_artifact_store(tmp_path / "artifacts")


def test_completed_run_records_params_environment_and_metrics(store, artifacts):
    params = {"lr": 0.1, "nested": {"a": [1, 2]}}
    with start_run("exp", params, store=store, artifacts=artifacts) as run:
        for step in range(2500):
            run.log_metric("loss", 1.0 / (step + 1), step)
        run.log_metrics({"val_loss": 0.5, "val_auc": 0.9}, step=2500)
        run.set_summary({"test_auc": 0.91})
        assert run.info().status is RunStatus.RUNNING
    stored = store.get_run(run.run_id)
    assert stored.status is RunStatus.COMPLETED and stored.ended_at is not None
    assert stored.params == {"lr": 0.1, "nested": {"a": [1, 2]}}
    # the summary, then the last point of every series
    assert stored.metrics == {"test_auc": 0.91, "loss": 1 / 2500, "val_loss": 0.5, "val_auc": 0.9}
    assert {"python", "torch", "hostname", "command"} <= set(stored.environment)
    history = store.get_metric_history(run.run_id, "loss").items
    assert [p.step for p in history] == list(range(2500))
    assert history[9].value == pytest.approx(0.1)
    assert stored.artifact_uri == artifacts.run_uri(run.run_id)


def test_exception_marks_the_run_failed_with_the_error_and_keeps_logged_points(store, artifacts):
    with pytest.raises(ValueError):
        with start_run("exp", store=store, artifacts=artifacts) as run:
            run.log_metric("loss", 1.0, 0)
            raise ValueError("boom")
    stored = store.get_run(run.run_id)
    assert stored.status is RunStatus.FAILED
    assert stored.error == "ValueError: boom"
    assert len(store.get_metric_history(run.run_id, "loss").items) == 1


def test_a_pruned_trial_ends_its_run_pruned_not_failed(store, artifacts):
    with pytest.raises(Pruned):
        with start_run("exp", store=store, artifacts=artifacts) as run:
            raise Pruned(40, 0.61)
    stored = store.get_run(run.run_id)
    assert (stored.status, stored.error) == (RunStatus.PRUNED, "pruned at step 40 (objective "
                                                               "0.61)")


def test_ctrl_c_marks_the_run_failed(store, artifacts):
    with pytest.raises(KeyboardInterrupt):
        with start_run("exp", store=store, artifacts=artifacts) as run:
            raise KeyboardInterrupt
    assert store.get_run(run.run_id).error == "interrupted (Ctrl+C)"


def test_artifacts_land_under_the_run(store, artifacts, tmp_path):
    source = tmp_path / "notes.txt"
    source.write_text("hi")
    with start_run("exp", store=store, artifacts=artifacts, code_dir=tmp_path) as run:
        run.log_artifact(source, "docs/notes.txt")
        run.put_artifact("report.json", b"{}")
    assert artifacts.list_names(run.run_id) == ["docs/notes.txt", "report.json"]


def test_git_state_is_recorded_inside_a_repository(store, artifacts, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text("lr = 0.1\n")
    for args in (["init", "-q"], ["add", "train.py"],
                 ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    with start_run("exp", store=store, artifacts=artifacts, code_dir=repo) as run:
        pass
    stored = store.get_run(run.run_id)
    assert len(stored.git_commit) == 40 and stored.git_dirty is False
    assert artifacts.list_names(run.run_id) == ["environment/requirements.txt"]

    (repo / "train.py").write_text("lr = 0.01\n")
    with start_run("exp", store=store, artifacts=artifacts, code_dir=repo) as dirty:
        pass
    assert store.get_run(dirty.run_id).git_dirty is True
    diff = artifacts.get_bytes(dirty.run_id, "environment/git.diff").decode()
    assert "-lr = 0.1" in diff and "+lr = 0.01" in diff


def test_environment_names_machine_packages_and_versions(store, artifacts, tmp_path):
    with start_run("exp", store=store, artifacts=artifacts, code_dir=tmp_path) as run:
        pass
    env = store.get_run(run.run_id).environment
    assert env["packages"]["SQLAlchemy"] and env["torch"].startswith("2.")
    assert env["cpu_model"] and env["cpu_count"] >= 1 and env["hostname"]
    assert (env["gpu_count"], env["gpus"]) == (0, []) or env["cuda"]
    assert env["command"] == sys.argv


def test_nested_runs_and_active_run(store, artifacts, tmp_path):
    assert active_run() is None
    with start_run("exp", store=store, artifacts=artifacts, code_dir=tmp_path) as outer:
        assert active_run() is outer
        with start_run("exp", parent=outer, tags={"trial": 1}, store=store,
                       artifacts=artifacts, code_dir=tmp_path) as inner:
            assert active_run() is inner
        assert active_run() is outer
    assert active_run() is None
    stored = store.get_run(inner.run_id)
    assert (stored.parent_run_id, stored.tags) == (outer.run_id, {"trial": 1})
    children = store.search_runs(filter=f"parent_run_id = '{outer.run_id}'").items
    assert [r.run_id for r in children] == [inner.run_id]


def test_missing_parent_or_resumed_run_is_refused_before_anything_is_created(
        store, artifacts, tmp_path):
    with pytest.raises(NotFound, match="parent run 'nope' not found"):
        start_run("exp", parent="nope", store=store, artifacts=artifacts, code_dir=tmp_path)
    with pytest.raises(NotFound, match="run 'gone' not found"):
        start_run("exp", resume="gone", store=store, artifacts=artifacts, code_dir=tmp_path)
    assert store.list_runs().items == ()


def test_params_merge_and_logging_after_end_is_refused(store, artifacts, tmp_path):
    run = start_run("exp", {"a": 1, "b": {"c": 2}}, store=store, artifacts=artifacts,
                    code_dir=tmp_path)
    run.log_params({"b": {"d": 3}, "e": "x"})
    assert run.end().params == {"a": 1, "b": {"d": 3}, "e": "x"}
    assert run.end() is None  # ending twice is harmless
    with pytest.raises(Conflict, match="has ended"):
        run.log_metric("loss", 1.0, 0)


def test_resume_reopens_the_run_and_sums_device_hours(store, artifacts, tmp_path):
    first = start_run("exp", store=store, artifacts=artifacts, code_dir=tmp_path)
    first.log_metric("loss", 1.0, 0)
    time.sleep(0.05)
    stopped = first.end(RunStatus.PREEMPTED)
    assert stopped.status is RunStatus.PREEMPTED and stopped.device_hours > 0
    with start_run("exp", resume=first.run_id, store=store, artifacts=artifacts) as again:
        assert again.info().status is RunStatus.RUNNING
        again.log_metric("loss", 0.5, 1)
        time.sleep(0.05)
    stored = store.get_run(first.run_id)
    assert stored.status is RunStatus.COMPLETED and stored.device_hours > stopped.device_hours
    assert [p.value for p in store.get_metric_history(first.run_id, "loss").items] == [1.0, 0.5]
    with pytest.raises(Conflict, match="not in experiment 'other'"):
        start_run("other", resume=first.run_id, store=store, artifacts=artifacts)


def test_an_attached_handle_logs_to_the_existing_run_and_leaves_it_open(store, artifacts,
                                                                         tmp_path):
    with start_run("exp", store=store, artifacts=artifacts, code_dir=tmp_path) as owner:
        rank0 = RunHandle.attach(store, owner.run_id, artifacts)
        rank0.log_metrics({"loss": 0.5, "acc": 0.75}, step=3)
        assert rank0.flush() is True
        rank0._at_exit()  # what the interpreter does at exit: close(), not end()
        assert store.get_run(owner.run_id).status is RunStatus.RUNNING
        with pytest.raises(Conflict):
            rank0.log_metric("loss", 0.1, 4)
        same = RunHandle.attach(store, owner.run_id, artifacts)
        assert same.info().metrics == {"loss": 0.5, "acc": 0.75}
        same.end(RunStatus.COMPLETED)
    with pytest.raises(NotFound):
        RunHandle.attach(store, "missing", artifacts)


def test_sigterm_ends_the_run_preempted_not_running(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    script = textwrap.dedent(f"""
        import sys, time
        from trainforge.storage import SqlStore
        from trainforge.tracking import start_run
        store = SqlStore({url!r})
        with start_run("exp", store=store, artifacts={str(tmp_path / 'a')!r}) as run:
            print(run.run_id, flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    run_id = proc.stdout.readline().strip()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 1
    assert "trainforge.errors.Preempted: preempted by SIGTERM" in proc.stderr.read()
    store = SqlStore(url)
    stored = store.get_run(run_id)
    store.close()
    assert stored.status is RunStatus.PREEMPTED
    assert stored.error == "preempted by SIGTERM"
