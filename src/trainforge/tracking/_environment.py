"""What a run ran on: interpreter, libraries, machine (its code: `_code`).

GPU facts come from torch only when the process has already imported it (a training script
has), so a script that only tracks does not pay torch's import time; torch's version is read
from the installed package either way.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from typing import Any

from trainforge.config import redact_argument


def capture_environment() -> dict[str, Any]:
    """Versions and machine facts recorded with every run (JSON-safe)."""
    gpus = gpu_info()
    return {
        "python": platform.python_version(),
        "torch": _version("torch"),
        "cuda": gpus["cuda"],
        "gpu_count": gpus["count"],
        "gpus": gpus["names"],
        "gpu_driver": gpus["driver"],
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "command": [redact_argument(argument) for argument in sys.argv],
        "pid": os.getpid(),
        "packages": installed_packages(),
    }


def installed_packages() -> dict[str, str]:
    """name → version of every distribution importable here, sorted by name."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(name, dist.version)
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo on Linux, else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_info() -> dict[str, Any]:
    """CUDA version, GPU count, names and driver version; zeros when torch is not imported or
    sees no GPU."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return {"cuda": None, "count": 0, "names": [], "driver": None}
    count = torch.cuda.device_count()
    return {"cuda": torch.version.cuda, "count": count,
            "names": [torch.cuda.get_device_name(i) for i in range(count)],
            "driver": _nvidia_driver()}


def _nvidia_driver() -> str | None:
    try:
        result = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, check=True, timeout=10,
        )
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    return result.stdout.splitlines()[0].strip() if result.stdout.strip() else None


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
