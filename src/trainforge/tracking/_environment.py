"""What a run ran on: code version, interpreter, libraries, machine."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class GitState:
    commit: str | None
    dirty: bool | None


def git_state(directory: str | Path = ".") -> GitState:
    """The HEAD commit and whether the work tree has changes; (None, None) outside git."""
    try:
        commit = _git(directory, "rev-parse", "HEAD")
        status = _git(directory, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return GitState(None, None)
    return GitState(commit, bool(status))


def _git(directory: str | Path, *args: str) -> str:
    result = subprocess.run(
        ["git", *args], cwd=directory, capture_output=True, text=True, check=True, timeout=10
    )
    return result.stdout.strip()


def capture_environment() -> dict[str, Any]:
    """Versions and machine facts recorded with every run."""
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda if torch.cuda.is_available() else None,
        "gpu_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "command": sys.argv,
        "pid": os.getpid(),
    }
