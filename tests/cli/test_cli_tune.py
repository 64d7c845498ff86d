"""`trainforge tune` on the digits example: a study that ends with its best values refitted and
registered, read back with `tune show` and `tune list`; bad input exits with the field named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from example_scripts import EXAMPLES, load_example_script
from home import home_store

from trainforge.entities import RunStatus

pytest.importorskip("sklearn", reason="the digits images ship with scikit-learn")
TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
# A narrow space of good learning rates, so that the refit reliably passes the 0.95 gate.
SPACE = ('tuning.space={"training.optimizer.lr": {type: loguniform, low: 0.002, high: 0.01}, '
         '"model.dropout": {type: uniform, low: 0.0, high: 0.2}}')


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, cwd=cwd,
                          env=os.environ.copy(), timeout=600)


@pytest.fixture
def digits(tmp_path: Path) -> Path:
    for name in ("pipeline.yaml", "contract.yaml"):
        shutil.copy(EXAMPLES / "digits" / name, tmp_path / name)
    load_example_script("digits", "prepare.py").prepare(tmp_path / "data")
    return tmp_path


@pytest.mark.slow
def test_tune_on_digits_finishes_with_a_registered_best_model(digits):
    done = cli("tune", "pipeline.yaml", "training.epochs=10", "training.progress=off", SPACE,
               "--trials", "2", "--json", cwd=digits)
    assert done.returncode == 0, done.stderr
    assert "A new study created" not in done.stderr  # Optuna's own lines stay out
    result = json.loads(done.stdout)
    assert result["name"] == "digits-tune" and len(result["trials"]) == 2
    complete = [t for t in result["trials"] if t["state"] == "complete"]  # ASHA may prune one
    assert complete and {t["state"] for t in result["trials"]} <= {"complete", "pruned"}
    best = result["best"]
    assert best["value"] == max(t["value"] for t in complete)

    store = home_store()
    refit = store.get_run(result["refit_run_id"])
    assert refit.parent_run_id == result["study_run_id"]
    assert refit.params["training"]["optimizer"]["lr"] == best["params"]["training.optimizer.lr"]
    versions = store.list_model_versions().items
    assert [(v.model_name, v.run_id) for v in versions] == [("digits_cnn", refit.run_id)]
    assert refit.status is RunStatus.COMPLETED and refit.metrics["test_accuracy"] >= 0.95

    shown = cli("tune", "show", "digits-tune", "--json", cwd=digits)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["best"] == best
    listed = cli("tune", "list", cwd=digits)
    assert listed.returncode == 0 and "digits-tune" in listed.stdout
    table = cli("tune", "show", "digits-tune", cwd=digits).stdout
    assert "best params" in table and best["run_id"][:8] in table


@pytest.mark.slow
def test_a_bad_search_space_exits_2_naming_the_field(digits):
    bad = cli("tune", "pipeline.yaml", 'tuning.space={"training.epoch": {type: int, low: 1, '
              'high: 3}}', cwd=digits)
    assert bad.returncode == 2
    assert "tuning.space.training.epoch: the value 1 does not fit the spec: training.epoch: " \
        "unknown key; did you mean 'epochs'?" in bad.stderr


def test_a_misspelled_objective_is_refused_before_any_run(digits):
    bad = cli("tune", "pipeline.yaml", "tuning.objective.metric=val_acuracy", cwd=digits)
    assert bad.returncode == 2
    assert "tuning.objective.metric: expected one of " in bad.stderr
    assert "got 'val_acuracy'; did you mean 'val_accuracy'?" in bad.stderr
    assert not (digits / ".trainforge").exists()  # no database, no run


@pytest.mark.slow
def test_an_unknown_study_exits_1(digits):
    home_store().close()  # a database to look in, with no study
    for args in (["tune", "show", "nope"], ["tune-worker", "nope"]):
        done = cli(*args, cwd=digits)
        assert done.returncode == 1 and "study 'nope' not found" in done.stderr
