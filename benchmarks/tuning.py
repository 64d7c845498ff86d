"""Tuning figures: what pruning saves on the digits example, and what our study runner costs per
trial against plain Optuna on the same storage.

Prints one JSON object with two parts (the machine's load average too: other work on the
machine skews every figure):

- `pruning`: total training steps (summed over trials, in trial order) until a trial first
  reports a validation accuracy >= `--target`, for ASHA and Hyperband against random search
  without pruning, over the same space (`SPACE`: the digits example's dimensions, widened),
  trial budget and seeds (each trial samples from the
  study seed and its number, so the three methods try the same values). Averaged over
  `--seeds` seeds; a study that never reaches the target counts all its steps.
  `asha_steps_ratio` = ASHA / random. Goal <= 0.40. `hyperband_steps_ratio` likewise. Every
  method validates every `--val-every-n-steps` steps (and at epoch ends), and the pruners are
  fed each of those reports: their resource is then steps, the cost measured, not epochs.
- `overhead`: seconds per trial of a trivial objective (x^2), ours (`create_study` with its
  budget enqueued, then `work`: heartbeats, stale-trial checks, waiting trials taken one at a
  time) against plain Optuna (`study.optimize` with heartbeats on the same storage), at 1 and
  `--workers` worker processes, on the database `--db` (default: a fresh SQLite file). Each
  figure is the median time between consecutive trial completions in a window of trials:
  around trial 100 (`at_100`) and the last `--window` trials of `--trials` (`at_end`).
  `ratio_at_100` = ours / plain at trial 100 (goal <= 2); `growth` = ours at the end / ours at
  100 (goal: flat, <= 2). Ours enqueues its whole budget when the study is created
  (`setup_s`, one journal append per trial); `ratio_wall` compares whole wall times, setup
  included.

    .venv/bin/python benchmarks/tuning.py [--seeds 5] [--trials 12] [--epochs 9]
        [--reduction-factor 3] [--val-every-n-steps 10]
        [--overhead-trials 10000] [--workers 4] [--db URL] [--skip-pruning] [--skip-overhead]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from trainforge.config import Settings
from trainforge.pipeline import plan_pipeline
from trainforge.storage import open_store
from trainforge.tuning import StudyContext, create_study, load_study, open_storage, tune, work

ROOT = Path(__file__).resolve().parent.parent
DIGITS = ROOT / "examples" / "digits"
METHODS = {"random": "none", "asha": "asha", "hyperband": "hyperband"}
# Wider than the example's space: learning rates from far too low to too high and small to
# large batches, so that a budget holds the unpromising trials pruning is for.
SPACE = ('tuning.space={"training.optimizer.lr": {type: loguniform, low: 0.00001, high: 0.1}, '
         '"training.batch_size": {type: choice, values: [16, 32, 64, 128, 256]}, '
         '"model.dropout": {type: uniform, low: 0.0, high: 0.6}}')


def steps_to_target(store: Any, summary: Any, target: float) -> int:
    """Training steps summed over trials in trial order until one reports val_accuracy >=
    target (all of them when none does)."""
    total = 0
    for trial in sorted(summary.trials, key=lambda t: t.number):
        history = store.get_metric_history(trial.run_id, "val_accuracy").items
        for point in history:
            if point.value >= target:
                return total + point.step
        total += max((p.step for p in history), default=0)
    return total


def pruning(args: argparse.Namespace, work_dir: Path) -> dict[str, Any]:
    sys.path.insert(0, str(DIGITS))
    from prepare import prepare

    for name in ("pipeline.yaml", "contract.yaml"):
        shutil.copy(DIGITS / name, work_dir / name)
    prepare(work_dir / "data")
    steps: dict[str, list[int]] = {method: [] for method in METHODS}
    for seed in range(args.seeds):
        for method, pruner in METHODS.items():
            overrides = [f"training.epochs={args.epochs}", "training.progress=off",
                         "training.early_stopping=null", "evaluation.gates=[]",
                         "training.schedule.min_lr=0", "training.schedule.warmup_steps=0", SPACE,
                         "tuning.refit=false", "tuning.sampler=random",
                         f"tuning.pruner.type={pruner}", "tuning.pruner.min_resource=1",
                         f"tuning.pruner.reduction_factor={args.reduction_factor}",
                         *([f"training.val_every_n_steps={args.val_every_n_steps}",
                            f"tuning.report_every_n_steps={args.val_every_n_steps}"]
                           if args.val_every_n_steps else []),
                         f"tuning.seed={seed}"]
            result = tune(work_dir / "pipeline.yaml", overrides, trials=args.trials,
                          study=f"{method}-{seed}")
            store = open_store(Settings.from_env().database_url.get_secret_value())
            steps[method].append(steps_to_target(store, result.summary, args.target))
    mean = {method: statistics.mean(values) for method, values in steps.items()}
    return {"target_val_accuracy": args.target, "seeds": args.seeds, "trials": args.trials,
            "epochs": args.epochs, "reduction_factor": args.reduction_factor,
            "val_every_n_steps": args.val_every_n_steps, "mean_steps": mean, "steps": steps,
            "asha_steps_ratio": mean["asha"] / mean["random"],
            "hyperband_steps_ratio": mean["hyperband"] / mean["random"]}


def trivial(trial: optuna.Trial) -> float:
    return trial.suggest_float("x", -1.0, 1.0) ** 2


def _ours(url: str, name: str) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(url)
    study, _ = load_study(storage, name)
    work(study, storage, trivial, bounded=True)


def _plain(url: str, name: str, trials: int) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(url)
    study = optuna.load_study(study_name=name, storage=storage,
                              sampler=optuna.samplers.RandomSampler())
    study.optimize(trivial, callbacks=[optuna.study.MaxTrialsCallback(
        trials, states=(TrialState.COMPLETE,))])


def _per_trial(url: str, name: str, trials: int, window: int) -> dict[str, float]:
    """Median seconds between consecutive completions around trial 100 and at the end."""
    study = optuna.load_study(study_name=name, storage=open_storage(url))
    ends = sorted(t.datetime_complete.timestamp() for t in study.get_trials(
        deepcopy=False, states=(TrialState.COMPLETE,)))[:trials]
    gaps = [b - a for a, b in zip(ends, ends[1:], strict=False)]
    early = gaps[max(0, 100 - window // 2):100 + window // 2]
    return {"at_100": statistics.median(early), "at_end": statistics.median(gaps[-window:]),
            "trials": len(ends)}


def overhead(args: argparse.Namespace, work_dir: Path) -> dict[str, Any]:
    url = args.db or f"sqlite:///{work_dir / 'overhead.db'}"
    spec = plan_pipeline(DIGITS / "pipeline.yaml", [
        "tuning.sampler=random", f"tuning.trials={args.overhead_trials}"]).spec
    context = StudyContext(spec, None, (), "benchmark", None)
    spawn = multiprocessing.get_context("spawn")
    figures: dict[str, Any] = {"db": url.split(":")[0]}
    for workers in sorted({1, args.workers}):
        row: dict[str, Any] = {}
        for side in ("plain", "ours"):
            name = f"{side}-{workers}"
            storage = open_storage(url)
            started = time.perf_counter()
            if side == "ours":
                create_study(storage, name, context, "benchmark")
                target, extra = _ours, ()
            else:
                optuna.create_study(storage=storage, study_name=name)
                target, extra = _plain, (args.overhead_trials,)
            setup = time.perf_counter() - started
            processes = [spawn.Process(target=target, args=(url, name, *extra))
                         for _ in range(workers)]
            for process in processes:
                process.start()
            for process in processes:
                process.join()
            row[side] = {**_per_trial(url, name, args.overhead_trials, args.window),
                         "setup_s": setup, "wall_s": time.perf_counter() - started}
        row["ratio_at_100"] = row["ours"]["at_100"] / row["plain"]["at_100"]
        row["ratio_wall"] = row["ours"]["wall_s"] / row["plain"]["wall_s"]  # setup included
        row["growth"] = row["ours"]["at_end"] / row["ours"]["at_100"]
        row["plain_growth"] = row["plain"]["at_end"] / row["plain"]["at_100"]
        figures[f"workers_{workers}"] = row
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=9)
    parser.add_argument("--target", type=float, default=0.98)
    parser.add_argument("--val-every-n-steps", type=int, default=10,
                        help="validate (and report to the pruner) every N steps too, so every "
                        "method sees the target as soon as it is reached and the pruners' "
                        "resource is steps; 0: at epoch ends only")
    parser.add_argument("--reduction-factor", type=int, default=3,
                        help="ASHA's and Hyperband's: 1/n of the trials at a rung go on")
    parser.add_argument("--overhead-trials", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=50)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--db", help="database URL for the overhead figures")
    parser.add_argument("--skip-pruning", action="store_true")
    parser.add_argument("--skip-overhead", action="store_true")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    work_dir = Path(tempfile.mkdtemp(prefix="tuning-bench-"))
    os.environ.setdefault("TRAINFORGE_HOME", str(work_dir / "home"))
    try:
        report: dict[str, Any] = {"load_average": os.getloadavg()}
        if not args.skip_pruning:
            report["pruning"] = pruning(args, work_dir)
        if not args.skip_overhead:
            report["overhead"] = overhead(args, work_dir)
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
