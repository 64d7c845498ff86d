"""Cutting the database connection mid-run loses nothing: a TCP proxy in front of PostgreSQL is
closed (dropping live connections) while the run logs, then reopened."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from trainforge.config import Settings
from trainforge.entities import DataVersion, RunStatus
from trainforge.storage import SqlStore
from trainforge.tracking import replay_spills, start_run

pytestmark = pytest.mark.postgres


class Proxy:
    """Forwards 127.0.0.1:<port> to `upstream`; `cut()` stops listening and closes every live
    connection, `restore()` listens again on the same port."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listening = False
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self.port = listener.getsockname()[1]
        self._listening = True
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        self._listening = False
        time.sleep(0.1)  # the accept loop notices and closes the listener
        with self._lock:
            for sock in self._open:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while self._listening:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._open |= {client, server}
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(source, target), daemon=True).start()
        listener.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    for sock in (source, target):
        try:
            sock.close()
        except OSError:
            pass


@pytest.fixture
def proxied(pg_url: str):
    """(direct store, store through the proxy, proxy)."""
    url = make_url(pg_url)
    proxy = Proxy((url.host or "127.0.0.1", url.port or 5432))
    direct = SqlStore(pg_url)
    through = SqlStore(url.set(host="127.0.0.1", port=proxy.port).render_as_string(False))
    yield direct, through, proxy
    proxy.cut()
    through.close()
    direct.close()


def _log(run, steps: range) -> None:
    for step in steps:
        run.log_metric("loss", 1.0 / (step + 1), step)


def _flush_until_clean(run, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not run.flush():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_cutting_the_connection_mid_run_loses_nothing(proxied, tmp_path: Path) -> None:
    direct, through, proxy = proxied
    run = start_run("outage", store=through, code_dir=tmp_path, flush_interval=0.05,
                    heartbeat_interval=0.2)
    _log(run, range(0, 1000))
    assert run.flush() is True
    proxy.cut()
    _log(run, range(1000, 2000))
    run.set_tags({"during": "outage"})
    run.set_data_version(DataVersion("d" * 64, "data/*.parquet", ({"path": "a.parquet"},), 12))
    assert run.flush() is False
    assert (Settings.from_env().spill_dir / f"{run.run_id}.jsonl").exists()
    _log(run, range(2000, 3000))
    time.sleep(0.3)  # a few failed cycles and heartbeats
    proxy.restore()
    _log(run, range(3000, 4000))
    assert _flush_until_clean(run)
    run.end()
    stored = direct.get_run(run.run_id)
    assert stored.status is RunStatus.COMPLETED and stored.tags == {"during": "outage"}
    assert stored.data_version_id == "d" * 64
    assert direct.get_data_version("d" * 64).files == ({"path": "a.parquet"},)
    history = direct.get_metric_history(run.run_id, "loss").items
    assert [p.step for p in history] == list(range(4000))
    assert not (Settings.from_env().spill_dir / f"{run.run_id}.jsonl").exists()


def test_a_run_that_ends_during_the_outage_lands_on_replay(proxied, tmp_path: Path) -> None:
    direct, through, proxy = proxied
    run = start_run("outage", store=through, code_dir=tmp_path, flush_interval=0.05)
    _log(run, range(0, 200))
    run.flush()
    proxy.cut()
    _log(run, range(200, 700))
    assert run.end() is None
    assert direct.get_run(run.run_id).status is RunStatus.RUNNING
    proxy.restore()
    assert replay_spills(direct) == {run.run_id: 2}  # one metric batch, the end
    assert direct.get_run(run.run_id).status is RunStatus.COMPLETED
    assert [p.step for p in direct.get_metric_history(run.run_id, "loss").items] == list(range(700))
