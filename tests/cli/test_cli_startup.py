"""What a command imports before it answers: `--help`, `runs list`, `validate`, the study
readers (`tune list/show`, `pbt show`) and `checkpoints list` leave torch (and the rest of the
training stack) alone.
Timings are measured by benchmarks/cli_startup.py, never here; this pins the property that
makes them fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainforge.config import CheckpointSpec
from trainforge.entities import DataVersion, RunStatus
from trainforge.tracking import default_store
from trainforge.train.checkpoint import CheckpointManager

HEAVY = ("torch", "pandas", "pyarrow", "numpy", "sqlalchemy", "alembic", "sklearn")
# Runs the console script's `main` with the given arguments, then prints which heavy modules
# the process imported and whether the cyclic garbage collector is on (as JSON on the last line
# of stderr).
PROBE = f"""
import gc, json, sys
from trainforge.cli import main
sys.argv = ["trainforge", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)
print(json.dumps({{"heavy": heavy, "gc": gc.isenabled()}}), file=sys.stderr)
"""


def probe(*args: str) -> dict:
    """The heavy modules the command imported ("heavy"), whether the garbage collector was on
    ("gc") and what it printed ("stdout")."""
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                            text=True, env=os.environ.copy(), timeout=120)
    return {**json.loads(result.stderr.splitlines()[-1]), "stdout": result.stdout}


def imported(*args: str) -> list[str]:
    return probe(*args)["heavy"]


def test_help_and_version_import_nothing_heavy() -> None:
    assert imported("--help") == []
    assert imported("--version") == []
    assert imported("runs", "--help") == []


def test_runs_list_imports_only_the_sql_store() -> None:
    default_store()  # the database exists
    assert imported("runs", "list") == ["sqlalchemy"]


@pytest.mark.parametrize("command", [["tune", "list"], ["tune", "show", "nope"],
                                     ["pbt", "show", "nope"]])
def test_reading_studies_imports_no_training_stack(command: list[str]) -> None:
    default_store()
    assert not {"torch", "pandas", "pyarrow", "sklearn"} & set(imported(*command))


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])
def test_validate_checks_a_built_in_model_without_torch(fraud_project: Path, model: str) -> None:
    # pyarrow reads the data's Parquet footer for the column checks; nothing reads its rows
    loaded = imported("validate", str(fraud_project / "pipeline.yaml"), f"model.type={model}")
    assert not {"torch", "pandas", "sqlalchemy", "alembic"} & set(loaded)


def test_listing_checkpoints_imports_no_torch(tmp_path: Path) -> None:
    """Listing reads manifests and checks sizes: no tensor is loaded, so torch stays out."""
    store = default_store()
    experiment = store.get_or_create_experiment("checkpointed").experiment_id
    location = tmp_path / "checkpoints"
    system = {"checkpoint": {"location": str(location), "policy": {}}}
    run_id = store.create_run(experiment, {}, {}, "unused", system=system).run_id
    store.end_run(run_id, RunStatus.COMPLETED)
    with CheckpointManager(location, CheckpointSpec(), run_id) as manager:
        manager.save(7, {"data": {"epoch": 1}}, epoch=1, blocking=True)

    listing = probe("checkpoints", "list", run_id, "--all")
    assert listing["heavy"] == ["sqlalchemy"]  # the store's: neither torch nor NumPy
    assert str(location / "step-0000000007") in listing["stdout"]


def test_showing_a_run_names_its_data_version_without_the_data_stack() -> None:
    store = default_store()
    experiment = store.get_or_create_experiment("shown").experiment_id
    run_id = store.create_run(experiment, {}, {}, "unused").run_id
    version = DataVersion("ab" * 32, "data/", ({"name": "a.csv", "sha256": "cd" * 32},), 3)
    store.put_data_version(version)
    store.number_data_version("feed", version.data_version_id)
    store.set_data_version(run_id, version.data_version_id)

    shown = probe("runs", "show", run_id)
    assert shown["heavy"] == ["sqlalchemy"]  # no pandas, pyarrow or NumPy: names are rows
    assert "feed@1" in shown["stdout"]


@pytest.mark.slow
def test_the_garbage_collector_is_off_for_a_listing_and_on_for_a_run(tmp_path: Path) -> None:
    default_store()
    assert probe("runs", "list")["gc"] is False
    assert probe("run", str(tmp_path / "missing.yaml"))["gc"] is True


def test_the_training_stack_leaves_torchs_distributed_checkpoint_to_sharded_checkpoints() -> None:
    """Every `trainforge run` and torchrun worker imports the training stack; DCP (with torch's
    tensor and symbolic-shape stack behind it) loads only when a sharded checkpoint is saved
    or loaded."""
    probe = ("import sys; import trainforge.pipeline._distributed, trainforge.cli._app; "
             "print(sorted(m for m in ('torch', 'torch.distributed.checkpoint', 'sympy') "
             "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=120)
    assert result.stdout.split() == ["['torch']"], result.stderr
