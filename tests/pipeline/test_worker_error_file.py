"""A torchrun worker's error file is whole or absent: the agent parses it after terminating
the node's other workers, and an empty one (a worker terminated while writing it) made the
agent give up with `JSONDecodeError` instead of restarting the workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torch.distributed.elastic.multiprocessing.errors import ErrorHandler, ProcessFailure
from torch.distributed.elastic.multiprocessing.errors import error_handler as torch_handler

from trainforge.pipeline._worker import WholeErrorFile


def record(handler: ErrorHandler) -> None:
    try:
        raise RuntimeError("Connection closed by peer")
    except RuntimeError as exc:
        handler.record_exception(exc)


def agent_reads(path: Path) -> ProcessFailure:
    """What torchrun's agent makes of a worker that exited 1 with this error file."""
    return ProcessFailure(local_rank=0, pid=1, exitcode=1, error_file=str(path))


@pytest.fixture
def error_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "attempt_0" / "0" / "error.json"
    path.parent.mkdir(parents=True)
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))
    return path


def test_the_agent_reads_the_workers_message(error_file: Path) -> None:
    record(WholeErrorFile())
    assert agent_reads(error_file).message["message"] == "RuntimeError: Connection closed by peer"
    assert [p.name for p in error_file.parent.iterdir()] == ["error.json"]


def test_a_worker_killed_while_writing_leaves_no_file_the_agent_cannot_parse(
    error_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed_midway(data: object, fh: object) -> None:
        raise SystemExit(-15)  # SIGTERM's default action, after the file was opened

    monkeypatch.setattr(torch_handler.json, "dump", killed_midway)
    with pytest.raises(SystemExit):
        record(ErrorHandler())
    with pytest.raises(json.JSONDecodeError):  # torch's own handler: an empty file
        agent_reads(error_file)

    error_file.unlink()
    with pytest.raises(SystemExit):
        record(WholeErrorFile())
    assert not error_file.exists()
    assert agent_reads(error_file).exitcode == 1
