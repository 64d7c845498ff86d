import signal
import subprocess
import sys
import textwrap
import time

import pytest

from trainforge.entities import RunStatus
from trainforge.storage import SqlStore
from trainforge.storage.artifacts import LocalArtifactStore
from trainforge.tracking import start_run


@pytest.fixture
def artifacts(tmp_path):
    return LocalArtifactStore(tmp_path / "artifacts")


def test_completed_run_records_params_environment_and_metrics(store, artifacts):
    with start_run(store, artifacts, "exp", {"lr": 0.1, "nested": {"a": [1, 2]}}) as run:
        for step in range(2500):
            run.log_metric("loss", 1.0 / (step + 1), step)
        run.log_metrics({"val_loss": 0.5, "val_auc": 0.9}, step=2500)
        run.set_summary({"test_auc": 0.91})
        assert run.info().status is RunStatus.RUNNING
    stored = store.get_run(run.run_id)
    assert stored.status is RunStatus.COMPLETED and stored.ended_at is not None
    assert stored.params == {"lr": 0.1, "nested": {"a": [1, 2]}}
    assert stored.metrics == {"test_auc": 0.91}
    assert {"python", "torch", "hostname", "command"} <= set(stored.environment)
    history = store.get_metric_history(run.run_id, "loss")
    assert [p.step for p in history] == list(range(2500))
    assert history[9].value == pytest.approx(0.1)
    assert stored.artifact_uri == artifacts.run_uri(run.run_id)


def test_exception_marks_the_run_failed_with_the_error_and_keeps_logged_points(store, artifacts):
    with pytest.raises(ValueError):
        with start_run(store, artifacts, "exp", {}) as run:
            run.log_metric("loss", 1.0, 0)
            raise ValueError("boom")
    stored = store.get_run(run.run_id)
    assert stored.status is RunStatus.FAILED
    assert stored.error == "ValueError: boom"
    assert len(store.get_metric_history(run.run_id, "loss")) == 1


def test_ctrl_c_marks_the_run_failed(store, artifacts):
    with pytest.raises(KeyboardInterrupt):
        with start_run(store, artifacts, "exp", {}) as run:
            raise KeyboardInterrupt
    assert store.get_run(run.run_id).error == "interrupted (Ctrl+C)"


def test_artifacts_land_under_the_run(store, artifacts, tmp_path):
    source = tmp_path / "notes.txt"
    source.write_text("hi")
    with start_run(store, artifacts, "exp", {}) as run:
        run.log_artifact(source, "docs/notes.txt")
        run.put_artifact("report.json", b"{}")
    assert artifacts.list_names(run.run_id) == ["docs/notes.txt", "report.json"]


def test_git_state_is_recorded_inside_a_repository(store, artifacts, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit",
                                  "--allow-empty", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    with start_run(store, artifacts, "exp", {}, code_dir=repo) as run:
        pass
    stored = store.get_run(run.run_id)
    assert len(stored.git_commit) == 40 and stored.git_dirty is False


def test_sigterm_ends_the_run_failed_not_running(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    script = textwrap.dedent(f"""
        import sys, time
        from trainforge.storage import SqlStore
        from trainforge.storage.artifacts import LocalArtifactStore
        from trainforge.tracking import start_run
        store = SqlStore({url!r})
        with start_run(store, LocalArtifactStore({str(tmp_path / 'a')!r}), "exp", {{}}) as run:
            print(run.run_id, flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    run_id = proc.stdout.readline().strip()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    store = SqlStore(url)
    stored = store.get_run(run_id)
    store.close()
    assert stored.status is RunStatus.FAILED
    assert stored.error == "terminated (exit code 143)"
