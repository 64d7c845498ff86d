"""A command whose optional dependency is missing (a plain `pip install trainforge`) exits 1
with one line naming the extra to install, never a traceback. Each case runs `trainforge` in a
subprocess whose import system refuses the extra's modules, as a venv without them would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs the CLI with the modules named in argv[1] (comma-separated) made unimportable: a
# finder ahead of all others raises what Python raises for a module that is not installed.
BLOCKING_MAIN = """
import sys
blocked = set(sys.argv[1].split(","))

class Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Uninstalled())
sys.argv = ["trainforge", *sys.argv[2:]]
from trainforge.cli import main
main()
"""

SERVER = ["fastapi", "uvicorn", "prometheus_client"]
EXPORT = ["onnx", "onnxruntime", "onnxscript"]


def trainforge_without(modules: list[str], args: list[str],
                       cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCKING_MAIN, ",".join(modules), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def hint(command: str, extra: str) -> str:
    return (f"{command} needs the optional {extra!r} dependencies: "
            f"pip install 'trainforge[{extra}]'")


CASES = [
    (["uvicorn"], ["serve", "fraud_detector"], hint("trainforge serve", "server")),
    (SERVER, ["serve", "fraud_detector", "--port", "0"], hint("trainforge serve", "server")),
    (["optuna"], ["tune", "examples/digits/pipeline.yaml"], hint("trainforge tune", "tune")),
    (["optuna"], ["tune", "show", "digits-big"], hint("trainforge tune show", "tune")),
    (["optuna"], ["tune", "list"], hint("trainforge tune list", "tune")),
    (["optuna"], ["tune-worker", "digits-big"], hint("trainforge tune-worker", "tune")),
    (["onnx"], ["export", "fraud_detector", "1"], hint("trainforge export", "export")),
    (EXPORT, ["export", "fraud_detector", "1", "--int8"], hint("trainforge export", "export")),
    (["onnxscript"], ["export", "fraud_detector", "1"], hint("trainforge export", "export")),
]


@pytest.mark.parametrize(("blocked", "args", "line"), CASES,
                         ids=[f"{' '.join(c[1])} without {','.join(c[0])}" for c in CASES])
def test_a_command_without_its_extra_names_the_extra_in_one_line(
    tmp_path: Path, blocked: list[str], args: list[str], line: str
) -> None:
    result = trainforge_without(blocked, args, tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [line]
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []  # checked before anything is read or written


def test_help_needs_no_extra(tmp_path: Path) -> None:
    result = trainforge_without(SERVER, ["serve", "--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "production version" in result.stdout


def test_a_command_with_its_extra_goes_past_the_check(tmp_path: Path) -> None:
    """With uvicorn importable, `serve` reaches its own checks: here, no database."""
    result = trainforge_without(["optuna"], ["serve", "fraud_detector"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("no trainforge database at "), result.stderr


def test_a_database_driver_found_missing_later_names_its_extra(tmp_path: Path) -> None:
    """A PostgreSQL home without psycopg fails where SQLAlchemy loads the driver: one line
    naming the `postgres` extra, no traceback."""
    environment = {"TRAINFORGE_DB": "postgresql+psycopg://nobody@127.0.0.1:1/none"}
    result = subprocess.run(
        [sys.executable, "-c", BLOCKING_MAIN, "psycopg", "runs", "list"], cwd=tmp_path,
        capture_output=True, text=True, timeout=120,
        env={**os.environ, **environment})
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: No module named 'psycopg'")
    assert line.endswith("the optional 'postgres' dependencies are not installed: "
                         "pip install 'trainforge[postgres]'")

