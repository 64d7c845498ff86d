"""Data that changes daily, any past run reproduced: train on day 10's snapshot, five more days
arrive, then the pinned version trains to identical metrics while the unpinned source has
moved on."""

from __future__ import annotations

import shutil
from pathlib import Path

from example_scripts import load_example_script
from fraud_fixtures import EXAMPLE
from home import home_store

from trainforge.config import Settings
from trainforge.pipeline import run_pipeline
from trainforge.versioning import open_repository

FAST = ["training.epochs=2", "registry=null", "evaluation.gates=[]"]


def _results(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics, without the timings (seconds, rates) that differ between any two runs."""
    return {k: v for k, v in metrics.items() if not k.endswith(("_s", "per_s"))}


def test_a_pinned_day_10_run_reproduces_after_five_more_days(tmp_path: Path) -> None:
    generator = load_example_script("fraud", "generate.py")
    shutil.copy(EXAMPLE / "pipeline.yaml", tmp_path / "pipeline.yaml")
    shutil.copy(EXAMPLE / "contract.yaml", tmp_path / "contract.yaml")
    generator.generate(tmp_path / "data", days=10, rows=20_000, seed=7)
    store = home_store()
    repository = open_repository(Settings.from_env(), store)
    day10 = repository.snapshot(str(tmp_path / "data"), name="fraud").version
    repository.tag("fraud", "fraud@day10")
    spec = tmp_path / "pipeline.yaml"

    first = run_pipeline(spec, [*FAST, "data.version=fraud@day10"])
    appended = generator.append_days(tmp_path / "data", 5)
    again = run_pipeline(spec, [*FAST, "data.version=fraud@day10"])
    latest = run_pipeline(spec, FAST)

    assert [p.name for p in appended][-1] == "transactions-2026-01-15.parquet"
    assert first.run.data_version_id == again.run.data_version_id == day10.data_version_id
    runs = {r.run_id: store.get_run(r.run_id) for r in (first.run, again.run, latest.run)}
    assert _results(runs[again.run.run_id].metrics) == _results(runs[first.run.run_id].metrics)
    assert "test_roc_auc" in _results(runs[first.run.run_id].metrics)
    assert latest.run.data_version_id != day10.data_version_id
    assert store.get_data_version(latest.run.data_version_id).num_rows > day10.num_rows
