"""Heartbeats and crash detection: a run whose process was SIGKILLed is marked crashed by
`trainforge runs gc`; a live one is not."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from trainforge.entities import RunStatus
from trainforge.storage import SqlStore
from trainforge.tracking import collect_crashed_runs, start_run

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


def test_a_killed_process_is_crashed_by_gc_and_a_live_run_is_not(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    script = textwrap.dedent(f"""
        import time
        from trainforge.storage import SqlStore
        from trainforge.tracking import start_run
        run = start_run("exp", store=SqlStore({url!r}), code_dir={str(tmp_path)!r},
                        heartbeat_interval=0.1)
        run.log_metric("loss", 1.0, 0)
        run.flush()
        print(run.run_id, flush=True)
        time.sleep(60)
    """)
    victim = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    run_id = victim.stdout.readline().strip()
    store = SqlStore(url)
    try:
        alive = start_run("exp", store=store, code_dir=tmp_path, heartbeat_interval=0.1)
        time.sleep(0.3)
        assert store.get_run(run_id).device_hours > 0  # heartbeats landed
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        time.sleep(1.5)
        env = {**os.environ, "TRAINFORGE_DB": url}
        result = subprocess.run([TRAINFORGE, "runs", "gc", "--timeout", "1", "--json"],
                                capture_output=True, text=True, env=env, timeout=60)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == [run_id]
        crashed = store.get_run(run_id)
        assert crashed.status is RunStatus.CRASHED and "no heartbeat since" in crashed.error
        assert crashed.metrics == {"loss": 1.0}
        assert store.get_run(alive.run_id).status is RunStatus.RUNNING
        alive.end()
    finally:
        store.close()


def test_gc_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        collect_crashed_runs(0)
