"""`trainforge reproduce` from a run's record alone, as a user would: a deterministic fraud run
started in one folder of a git project with uncommitted changes (a tracked file edited, an
untracked contract, a binary file changed), then the project moves on (a new commit, a day
appended to the feed, a past day's file rewritten in place) and the run is reproduced from
another folder with a fresh TRAINFORGE_HOME pointing at the same database and artifact root:
"identical". A run that cannot be reproduced is refused before anything runs, naming each
part that lacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from example_scripts import load_example_script
from fraud_fixtures import EXAMPLE

from trainforge.config import Settings
from trainforge.storage import open_store
from trainforge.tracking import system_of

pytestmark = pytest.mark.slow
GIT = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
FAST = ["training.epochs=2", "registry=null", "evaluation.gates=[]",
        "training.deterministic=true"]


def trainforge(*args: str, cwd: Path, env: dict[str, str],
               codes: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "trainforge", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode in codes, result.stdout + result.stderr
    return result


def user_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINFORGE_")}
    return {**env, **settings}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project holding the fraud example's spec (committed) and 8 days of its feed
    (ignored, as data is)."""
    root = tmp_path / "project"
    (root / "fraud").mkdir(parents=True)
    shutil.copy(EXAMPLE / "pipeline.yaml", root / "fraud" / "pipeline.yaml")
    (root / "logo.bin").write_bytes(bytes(range(256)))
    (root / ".gitignore").write_text("data/\n.trainforge/\n")
    load_example_script("fraud", "generate.py").generate(root / "fraud" / "data", days=8,
                                                         rows=16_000, seed=7)
    git("init", "-q", cwd=root)
    git("add", ".", cwd=root)
    git("commit", "-qm", "fraud", cwd=root)
    return root


def test_a_run_is_reproduced_identically_after_code_and_data_moved_on(
        project: Path, tmp_path: Path) -> None:
    spec = project / "fraud" / "pipeline.yaml"
    spec.write_text(spec.read_text().replace("hidden: [64, 32]", "hidden: [32, 16]"))
    shutil.copy(EXAMPLE / "contract.yaml", project / "fraud" / "contract.yaml")  # untracked
    (project / "logo.bin").write_bytes(bytes(reversed(range(256))))
    started_in = tmp_path / "started-in"
    started_in.mkdir()
    home = started_in / ".trainforge"
    env = user_env(TRAINFORGE_HOME=str(home))
    first = json.loads(trainforge("run", str(spec), *FAST, "--json", cwd=started_in,
                                  env=env).stdout)

    git("add", ".", cwd=project)  # the project moves on: the changes committed, more
    git("commit", "-qm", "smaller model", cwd=project)
    spec.write_text(spec.read_text().replace("hidden: [32, 16]", "hidden: [8]"))
    git("commit", "-qam", "smallest model", cwd=project)
    subprocess.run([sys.executable, str(EXAMPLE / "generate.py"), "--out",
                    str(project / "fraud" / "data"), "--append-days", "1"], check=True,
                   capture_output=True)
    past = sorted((project / "fraud" / "data").glob("*.parquet"))[2]
    pd.read_parquet(past).iloc[::2].to_parquet(past)  # a past day rewritten in place

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fresh = user_env(TRAINFORGE_HOME=str(elsewhere / ".trainforge"),
                     TRAINFORGE_DB=f"sqlite:///{home / 'trainforge.db'}",
                     TRAINFORGE_ARTIFACTS=str(home / "artifacts"))
    reproduced = trainforge("reproduce", first["run_id"], cwd=elsewhere, env=fresh)
    shown = json.loads(trainforge("runs", "show", first["run_id"], "--json", cwd=elsewhere,
                                  env=fresh).stdout)

    assert "identical: the same params and data version" in reproduced.stdout, \
        reproduced.stdout + reproduced.stderr
    new_id = reproduced.stdout.split()[1]
    store = open_store(Settings.from_env(fresh).database_url.get_secret_value())
    again = store.get_run(new_id)
    assert system_of(again).reproduces == first["run_id"]
    assert again.data_version_id == first["data_version"]
    assert again.params["model"]["hidden"] == [32, 16]
    assert again.metrics["test_roc_auc"] == first["test_roc_auc"]
    assert shown["data_version_names"] == ["fraud@1"]
    assert not list(tmp_path.glob("trainforge-reproduce-*"))  # the temporary checkout is gone
    assert git("worktree", "list", "--porcelain", cwd=project).count("worktree ") == 1

    objects = home / "artifacts" / "data" / "objects"
    stored = len(list(objects.glob("*/*")))
    latest = json.loads(trainforge("run", str(spec), *FAST, "--json", cwd=started_in,
                                   env=env).stdout)
    shown = json.loads(trainforge("runs", "show", latest["run_id"], "--json", cwd=elsewhere,
                                  env=fresh).stdout)
    assert shown["data_version_names"] == ["fraud@2"]
    assert latest["data_version"] != first["data_version"]
    assert len(list(objects.glob("*/*"))) == stored + 2  # the new day and the rewritten one


def test_a_run_that_cannot_be_reproduced_is_refused_naming_what_lacks(
        project: Path, tmp_path: Path) -> None:
    spec = project / "fraud" / "pipeline.yaml"
    shutil.copy(EXAMPLE / "contract.yaml", project / "fraud" / "contract.yaml")
    home = tmp_path / "home"
    env = user_env(TRAINFORGE_HOME=str(home))
    run = json.loads(trainforge("run", str(spec), *FAST, "data.snapshot=false",
                                "data.storage_options.password=hunter2", "--json",
                                cwd=project, env=env).stdout)
    commit = git("rev-parse", "HEAD", cwd=project)
    shutil.rmtree(project)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("x")

    refused = trainforge("reproduce", run["run_id"], cwd=tmp_path, env=env, codes=(1,))
    busy = trainforge("reproduce", run["run_id"], "--in", str(tmp_path / "busy"),
                      cwd=tmp_path, env=env, codes=(1,))

    assert f"run {run['run_id']} cannot be reproduced:" in refused.stderr
    assert f"commit {commit} is in no repository here" in refused.stderr
    assert f"data version {run['data_version']}: its files were not stored" in refused.stderr
    assert "a value for data.storage_options.password: the override was recorded redacted" \
        in refused.stderr
    assert "hunter2" not in refused.stderr
    assert f"{tmp_path / 'busy'} holds files" in busy.stderr
    runs = json.loads(trainforge("runs", "list", "--json", cwd=tmp_path, env=env).stdout)
    assert [r["run_id"] for r in runs] == [run["run_id"]]  # nothing ran


def test_a_launched_run_is_reproduced_over_as_many_workers(project: Path, tmp_path: Path) -> None:
    spec = project / "fraud" / "pipeline.yaml"
    shutil.copy(EXAMPLE / "contract.yaml", project / "fraud" / "contract.yaml")
    env = user_env(TRAINFORGE_HOME=str(tmp_path / "home"), OMP_NUM_THREADS="1")
    run = json.loads(trainforge("run", str(spec), *FAST, "training.strategy=ddp",
                                "--nproc-per-node", "2", "--json", cwd=project,
                                env=env).stdout)

    reproduced = trainforge("reproduce", run["run_id"], "--json", cwd=tmp_path, env=env)

    verdict = json.loads(reproduced.stdout)
    assert verdict["verdict"] == "identical", verdict
    store = open_store(Settings.from_env(env).database_url.get_secret_value())
    again = system_of(store.get_run(verdict["reproduction"]))
    assert again.reproduces == run["run_id"]
    assert again.distributed is not None and again.distributed.nproc_per_node == 2
