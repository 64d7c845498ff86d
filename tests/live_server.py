"""A real uvicorn server on a free loopback port, run in a thread for the length of a test,
the router of a trained model's serve app, `trainforge server`'s session swapped per test
(`RestServer`), and records as its clients send them."""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import uvicorn
from fastapi import FastAPI
from trained_fraud import TrainedFraud

from trainforge.config import Settings
from trainforge.serving import VersionRouter, load_served_version
from trainforge.session import Session
from trainforge.storage import Store

CANARY_SHARE = 0.1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def live_server(app: FastAPI) -> Iterator[httpx.Client]:
    """A client of `app` served by uvicorn on 127.0.0.1 until the block ends."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(30)


@dataclass
class RestServer:
    """`trainforge server` on loopback; `serve` gives its session another store or artifact
    root (each test its own), while its users and tokens stay in a store of their own."""

    app: FastAPI
    url: str  # http://:TOKEN@127.0.0.1:PORT: an editor's token as the password
    home: Path
    users: Store  # the users and tokens the server checks

    def serve(self, store: Store | None = None, artifacts: Path | None = None) -> None:
        env = {"TRAINFORGE_HOME": str(self.home)}
        if artifacts is not None:
            env["TRAINFORGE_ARTIFACTS"] = str(artifacts)
        self.app.state.session = Session(Settings.from_env(env), store=store)


def wait_for(check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Poll `check()` until it is true (a condition the server reaches on its own)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def records_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as a client sends them: JSON values, ISO date-times, null for missing."""
    rows = frame.assign(ts=frame["ts"].map(lambda t: t.isoformat())).to_dict(orient="records")
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
            for row in rows]


def router_of(trained: TrainedFraud, runtime: str = "auto",
              model_name: str = "fraud_detector") -> VersionRouter:
    """The router `trainforge serve` builds over the trained model's versions."""
    def load(version):  # type: ignore[no-untyped-def]
        run = trained.store.get_run(version.run_id)
        return load_served_version(trained.artifacts, version, run, runtime=runtime)

    return VersionRouter(trained.store, model_name, load, canary_share=CANARY_SHARE, seed=1)
