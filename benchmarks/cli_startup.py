"""CLI commands: wall time of `trainforge` commands against a bare Python, printed as JSON.

Each command runs as a subprocess, the way a user runs it, in interleaved rounds (every command
once per round, so drifting load hits them alike); a figure is the median over the rounds, with
the fastest beside it. The baseline, `python -c pass` with the same interpreter, is measured in
the same rounds, and each command's median is also given as a ratio to it. Beside wall time,
the CPU time (user + system) of each process: it moves less with the load other work puts on
the machine.

Before timing, one SQLite home is filled the way a user's is after the README's walk-throughs:
`--runs` runs with two metrics each (the last one still running); the fraud example (its
generated data) trained twice and registered as versions 1 and 2 of `fraud_detector`, whose
spec gates production on `max_drop`; a tuning study of three trials and a population-based
study of two members on it. Commands and their goals (median wall time):

- under 0.5 s: `--help`; `runs list`;
- under 1 s, the read-only commands: `validate` (the fraud spec), `runs show`, `models show`,
  `tune list`, `tune show` of the study and of an unknown study, `pbt show`, `checkpoints
  list --all` of a trained run;
- under 3 s: `predict` of 1,000 rows by the production version;
- under 5 s: `models promote` to production through the `max_drop` gate (the production
  version re-scored on the candidate's test split of 45,000 rows); each round first moves the
  archived version (1 and 2 in turn) back to staging, not timed, then promotes it.

The machine's load average is printed before and after: on a shared machine every figure moves.

    .venv/bin/python benchmarks/cli_startup.py [--rounds 9] [--runs 50]
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
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from trainforge.entities import RunStatus
from trainforge.storage import Store, open_store

ROOT = Path(__file__).resolve().parents[1]
FRAUD = ROOT / "examples" / "fraud"
STUDY = "bench-study"


@dataclass(frozen=True)
class Command:
    """A command to time; `before` runs untimed ahead of it in every round. In round r, an
    argument `{version}` stands for the registered version `r % 2 + 1`."""

    argv: list[str]
    goal_s: float | None
    before: list[str] = field(default_factory=list)

    def in_round(self, number: int) -> tuple[list[str], list[str]]:
        """The command and its `before`, in round `number`."""
        version = str(number % 2 + 1)
        return ([a.replace("{version}", version) for a in self.argv],
                [a.replace("{version}", version) for a in self.before])


def main() -> None:
    args = _arguments()
    trainforge = str(Path(sys.executable).with_name("trainforge"))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="tf-bench-cli-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "TRAINFORGE_HOME": str(home / "home")}
        env.pop("TRAINFORGE_DB", None)
        made = _fill_home(home, env, trainforge, args.runs)
        commands = _commands(trainforge, made)
        wall, cpu = _timed_rounds(commands, env, args.rounds)
    baseline = statistics.median(wall["python -c pass"])
    figures = {name: _figures(wall[name], cpu[name], baseline)
               for name in commands if name != "python -c pass"}
    goals = {name: c.goal_s for name, c in commands.items() if c.goal_s is not None}
    report = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "rounds": args.rounds,
        "runs_in_database": args.runs,
        "baseline_median_s": round(baseline, 4),
        "baseline_cpu_median_s": round(statistics.median(cpu["python -c pass"]), 4),
        "commands": figures,
        "goals": {f"{name} under {goal} s": figures[name]["median_s"] < goal
                  for name, goal in goals.items()},
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="runs of each command")
    parser.add_argument("--runs", type=int, default=50, help="extra runs in the listed database")
    return parser.parse_args()


def _commands(trainforge: str, made: dict[str, str]) -> dict[str, Command]:
    tf = [trainforge]
    promote = [*tf, "models", "promote", "fraud_detector"]
    return {
        "python -c pass": Command([sys.executable, "-c", "pass"], None),
        "trainforge --help": Command([*tf, "--help"], 0.5),
        "trainforge runs list": Command([*tf, "runs", "list"], 0.5),
        "trainforge validate": Command([*tf, "validate", made["spec"]], 1.0),
        "trainforge runs show": Command([*tf, "runs", "show", made["run"]], 1.0),
        "trainforge models show": Command([*tf, "models", "show", "fraud_detector"], 1.0),
        "trainforge tune list": Command([*tf, "tune", "list"], 1.0),
        "trainforge tune show": Command([*tf, "tune", "show", STUDY], 1.0),
        "trainforge tune show (unknown study)": Command([*tf, "tune", "show", "nope"], 1.0),
        "trainforge pbt show": Command([*tf, "pbt", "show", made["pbt"]], 1.0),
        "trainforge checkpoints list --all": Command(
            [*tf, "checkpoints", "list", made["run"], "--all"], 1.0),
        "trainforge predict (1,000 rows)": Command(
            [*tf, "predict", "fraud_detector@production", "--input", made["rows"],
             "--output", made["scores"]], 3.0),
        "trainforge models promote (max_drop)": Command(
            [*promote, "{version}", "--to", "production", "--reason", "bench"], 5.0,
            before=[*promote, "{version}", "--to", "staging", "--reason", "bench"]),
    }


def _fill_home(tmp: Path, env: dict[str, str], trainforge: str, runs: int) -> dict[str, str]:
    """The home every command reads; returns the paths and ids the commands name."""
    data = tmp / "data"
    subprocess.run([sys.executable, str(FRAUD / "generate.py"), "--out", str(data)],
                   check=True, capture_output=True)
    spec = yaml.safe_load((FRAUD / "pipeline.yaml").read_text())
    spec["data"]["source"] = str(data / "transactions-*.parquet")
    spec["data"]["contract"] = str(FRAUD / "contract.yaml")
    spec["training"]["epochs"] = 1
    spec["registry"]["promotion"] = {"max_drop": [{"metric": "test_roc_auc", "max": 0.05}]}
    spec_path = tmp / "pipeline.yaml"
    spec_path.write_text(yaml.safe_dump(spec))

    def run(*argv: str) -> None:
        done = subprocess.run([trainforge, *argv], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"trainforge {' '.join(argv)} failed: {done.stderr}")

    run("run", str(spec_path))
    run("run", str(spec_path), "training.seed=1")
    run("models", "promote", "fraud_detector", "1", "--to", "production", "--reason", "bench")
    run("models", "promote", "fraud_detector", "2", "--to", "production", "--reason", "bench")
    tuning = {"objective": {"metric": "val_loss", "direction": "minimize"}, "seed": 0,
              "space": {"training.optimizer.lr": {"type": "loguniform", "low": 1e-4,
                                                  "high": 3e-2}}}
    study_spec = tmp / "study.yaml"
    study_spec.write_text(yaml.safe_dump({**spec, "tuning": {**tuning, "trials": 3}}))
    run("tune", str(study_spec), "--study", STUDY)
    pbt_spec = tmp / "pbt.yaml"
    pbt_spec.write_text(yaml.safe_dump({**spec, "tuning": {
        **tuning, "pbt": {"population": 2, "interval_steps": 200}}}))
    run("tune", str(pbt_spec))

    home = Path(env["TRAINFORGE_HOME"])
    store = open_store(f"sqlite:///{home / 'trainforge.db'}")
    try:
        first = store.list_model_versions().items[0].run_id
        pbt = next(r.run_id for r in store.search_runs().items
                   if r.system.get("pbt", {}).get("role") == "study")
        _make_runs(store, runs)
    finally:
        store.close()
    rows = tmp / "rows.parquet"
    frame = pd.read_parquet(sorted(data.glob("*.parquet"))[-1]).head(1_000)
    frame.drop(columns=[spec["data"]["target"]]).to_parquet(rows)
    return {"spec": str(spec_path), "run": first, "pbt": pbt, "rows": str(rows),
            "scores": str(tmp / "scores.parquet")}


def _make_runs(store: Store, count: int) -> None:
    """`count` runs with two summary metrics, all completed but the last (still running, so
    the listing checks its process)."""
    experiment = store.get_or_create_experiment("bench").experiment_id
    for number in range(count):
        run = store.create_run(experiment, {"lr": 10 ** -(number % 4)}, {}, "unused")
        store.set_summary_metrics(run.run_id, {"test_roc_auc": 0.5 + number / (2 * count),
                                               "test_accuracy": 0.9})
        if number < count - 1:
            store.end_run(run.run_id, RunStatus.COMPLETED)


def _timed_rounds(commands: dict[str, Command], env: dict[str, str],
                  rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each command, per round."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for number in range(rounds):
        for name, command in commands.items():
            argv, before = command.in_round(number)
            if before:
                _checked(name, subprocess.run(before, env=env, capture_output=True, text=True))
            used = _children_cpu()
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, capture_output=True, text=True)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_children_cpu() - used)
            _checked(name, done, allowed=(1,) if "unknown" in name else ())
    return wall, cpu


def _checked(name: str, done: subprocess.CompletedProcess[str],
             allowed: tuple[int, ...] = ()) -> None:
    if done.returncode != 0 and done.returncode not in allowed:
        raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr}")


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
