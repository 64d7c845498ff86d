"""Remote tracking: a training machine with no database and no artifact root of its own, only
`TRAINFORGE_DB=http://...` and an editor's token, trains, checkpoints and registers through
`trainforge server` (its store's wire protocol and its artifact proxy); a server killed with
SIGKILL mid-training and started again loses no point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from live_server import free_port, wait_for

from trainforge.entities import Role, RunStatus
from trainforge.server import issue_token
from trainforge.storage import Store, all_items, open_store

pytestmark = pytest.mark.slow
TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


class ServerProcess:
    """`trainforge server` over `home` on `port`, started (again) as a user starts it."""

    def __init__(self, home: Path) -> None:
        self.home, self.port = home, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "TRAINFORGE_HOME": str(self.home)}
        env.pop("TRAINFORGE_DB", None)
        self.process = subprocess.Popen([TRAINFORGE, "server", "--port", str(self.port)],
                                        env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        with httpx.Client(base_url=self.url, timeout=5) as client:
            wait_for(lambda: _healthy(client) or self.process.poll() is not None, timeout=60)
        assert self.process.poll() is None, "trainforge server exited"

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _healthy(client: httpx.Client) -> bool:
    try:
        return client.get("/health").status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def _server(home: Path) -> Iterator[tuple[ServerProcess, Store, str]]:
    """A server over `home`, its store (opened here, beside it) and an editor's token."""
    store = open_store(f"sqlite:///{home / 'trainforge.db'}")
    store.add_user("trainer", Role.EDITOR)
    token, _ = issue_token(store, "trainer")
    server = ServerProcess(home)
    server.start()
    try:
        yield server, store, token
    finally:
        if server.process is not None and server.process.poll() is None:
            server.process.terminate()
            server.process.wait(30)
        store.close()


def _train(project: Path, client_home: Path, server: ServerProcess, token: str,
           *overrides: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TRAINFORGE_HOME": str(client_home), "TRAINFORGE_DB": server.url,
           "TRAINFORGE_TOKEN": token}
    env.pop("TRAINFORGE_ARTIFACTS", None)
    return subprocess.Popen([TRAINFORGE, "run", "pipeline.yaml", "--json", *overrides],
                            cwd=project, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _steps(store: Store, run_id: str, key: str) -> list[int]:
    return [p.step for p in all_items(
        lambda cursor: store.get_metric_history(run_id, key, cursor=cursor))]


def test_a_machine_without_a_database_trains_checkpoints_and_registers_through_the_server(
        fraud_project: Path, tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    client_home = tmp_path / "client-home"
    with _server(tmp_path / "server") as (server, store, token):
        done = _train(fraud_project, client_home, server, token, "training.epochs=2",
                      "training.checkpoint.every_n_steps=20")
        out, err = done.communicate(timeout=600)
        assert done.returncode == 0, err

        (run,) = store.list_runs().items
        assert run.status is RunStatus.COMPLETED
        steps = _steps(store, run.run_id, "train_loss")
        assert steps == list(range(1, len(steps) + 1)) and len(steps) > 40
        checkpoints = store.list_checkpoints(run.run_id).items
        assert checkpoints and all(c.uri.startswith(server.url) for c in checkpoints)
        served = tmp_path / "server" / "artifacts" / run.run_id
        assert (served / "checkpoints").is_dir() and (served / "model").is_dir()
        (version,) = store.list_model_versions("fraud_detector").items
        assert version.run_id == run.run_id and version.data_version_id == run.data_version_id
        assert store.get_data_version(run.data_version_id).num_rows > 0
        assert token not in out + err + str(run.system) + run.artifact_uri

    assert not (client_home / "trainforge.db").exists()
    assert not (client_home / "artifacts").exists()
    assert not any((client_home / "spill").glob("*"))  # nothing left to replay


def test_a_server_killed_mid_training_loses_no_point(fraud_project: Path,
                                                     tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    epochs = 3
    with _server(tmp_path / "server") as (server, store, token):
        training = _train(fraud_project, tmp_path / "client-home", server, token,
                          f"training.epochs={epochs}", "training.batch_size=64",
                          "training.checkpoint.every_n_steps=100")

        def training_logged() -> bool:
            runs = store.list_runs().items
            return bool(runs) and len(_steps(store, runs[0].run_id, "train_loss")) >= 30

        wait_for(training_logged, timeout=300)
        assert training.poll() is None, "training ended before the server was killed"
        server.kill()
        time.sleep(3)  # the client's flushes and heartbeats meet a refused connection
        server.start()
        _, err = training.communicate(timeout=600)
        assert training.returncode == 0, err

        (run,) = store.list_runs().items
        assert run.status is RunStatus.COMPLETED
        steps = _steps(store, run.run_id, "train_loss")
        assert steps == list(range(1, len(steps) + 1))  # every step once, none lost
        assert len(steps) % epochs == 0 and len(steps) >= 3 * 200
        assert len(_steps(store, run.run_id, "val_loss")) == epochs
        assert store.list_model_versions("fraud_detector").items
