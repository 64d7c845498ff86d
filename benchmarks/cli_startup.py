"""CLI start-up: wall time of `trainforge` commands against a bare Python, printed as JSON.

Each command runs as a subprocess, the way a user runs it, in interleaved rounds (every command
once per round, so drifting load hits them alike); a figure is the median over the rounds, with
the fastest beside it. The baseline, `python -c pass` with the same interpreter, is measured in
the same rounds, and each command's median is also given as a ratio to it. Beside wall time,
the CPU time (user + system) of each process: it moves less with the load other work puts on
the machine. Commands:

- `--help`: the top-level help;
- `validate`: `trainforge validate examples/fraud/pipeline.yaml` (spec, contract, model name);
- `runs list`: `trainforge runs list` over a SQLite database holding `--runs` runs with two
  metrics each, made before timing (the migrated database exists, as after any first run).

Goal: each command under 0.5 s of wall time. The machine's load average is printed before and
after: on a shared machine every figure moves.

    .venv/bin/python benchmarks/cli_startup.py [--rounds 15] [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trainforge.storage import open_store

EXAMPLE_SPEC = Path(__file__).resolve().parents[1] / "examples" / "fraud" / "pipeline.yaml"
GOAL_S = 0.5


def main() -> None:
    args = _arguments()
    trainforge = str(Path(sys.executable).with_name("trainforge"))
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "trainforge --help": [trainforge, "--help"],
        "trainforge validate": [trainforge, "validate", str(EXAMPLE_SPEC)],
        "trainforge runs list": [trainforge, "runs", "list"],
    }
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="tf-bench-cli-") as home:
        env = {**os.environ, "TRAINFORGE_HOME": home}
        env.pop("TRAINFORGE_DB", None)
        _make_runs(Path(home), args.runs)
        wall, cpu = _timed_rounds(commands, env, args.rounds)
    baseline = statistics.median(wall["python -c pass"])
    report = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "rounds": args.rounds,
        "runs_in_database": args.runs,
        "baseline_median_s": round(baseline, 4),
        "baseline_cpu_median_s": round(statistics.median(cpu["python -c pass"]), 4),
        "commands": {name: _figures(wall[name], cpu[name], baseline)
                     for name in commands if name != "python -c pass"},
    }
    report["goals"] = {f"{name} under {GOAL_S} s": figures["median_s"] < GOAL_S
                       for name, figures in report["commands"].items()}
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="runs of each command")
    parser.add_argument("--runs", type=int, default=50, help="runs in the listed database")
    return parser.parse_args()


def _make_runs(home: Path, count: int) -> None:
    store = open_store(f"sqlite:///{home / 'trainforge.db'}")
    try:
        experiment = store.get_or_create_experiment("bench").experiment_id
        for number in range(count):
            run = store.create_run(experiment, {"lr": 10 ** -(number % 4)}, {}, "unused")
            store.set_summary_metrics(run.run_id, {"test_roc_auc": 0.5 + number / (2 * count),
                                                   "test_accuracy": 0.9})
    finally:
        store.close()


def _timed_rounds(commands: dict[str, list[str]], env: dict[str, str],
                  rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each command, per round."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            used = _children_cpu()
            start = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_children_cpu() - used)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr}")
    return wall, cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _figures(wall: list[float], cpu: list[float], baseline: float) -> dict[str, float]:
    median = statistics.median(wall)
    return {"median_s": round(median, 4), "fastest_s": round(min(wall), 4),
            "ratio_to_baseline": round(median / baseline, 1),
            "cpu_median_s": round(statistics.median(cpu), 4)}


if __name__ == "__main__":
    main()
