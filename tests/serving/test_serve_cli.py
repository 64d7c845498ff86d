"""`trainforge serve` as a user starts it: its own process, answering on loopback until it is
terminated; an unknown model exits 1, an unknown runtime is a bad argument."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from live_server import free_port, records_of

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


@pytest.mark.slow
def test_the_serve_command_answers_predict_until_terminated(trained):
    port = free_port()
    process = subprocess.Popen([TRAINFORGE, "serve", "fraud_detector", "--port", str(port)],
                               env={**os.environ, **trained.env}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None and time.monotonic() < deadline
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        answer = httpx.post(f"http://127.0.0.1:{port}/predict",
                            json=records_of(trained.golden().head(2))).json()
        assert answer["model"] == "fraud_detector" and len(answer["predictions"]) == 2
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert process.returncode in (0, -15)  # uvicorn shuts down, then re-raises SIGTERM
    assert "serving fraud_detector version" in output


def test_an_unknown_model_exits_1(trained):
    done = subprocess.run([TRAINFORGE, "serve", "no_such_model"], capture_output=True,
                          text=True, env={**os.environ, **trained.env}, timeout=120)
    assert done.returncode == 1 and "model 'no_such_model' not found" in done.stderr


def test_an_unknown_runtime_exits_2(trained):
    done = subprocess.run([TRAINFORGE, "serve", "fraud_detector", "--runtime", "tensorrt"],
                          capture_output=True, text=True, env={**os.environ, **trained.env},
                          timeout=120)
    assert done.returncode == 2 and "--runtime: expected auto, onnxruntime or torch" in done.stderr
