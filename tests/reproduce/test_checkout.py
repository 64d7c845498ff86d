"""The recorded code checked out again: the commit as a worktree with the recorded changes
(binary files too) and the untracked files the run read; the resolved spec written into it,
its paths moved into the checkout and pinned to the run's data version; the worktree removed
without a trace in the repository."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from trainforge.config import Settings
from trainforge.errors import TrainforgeError
from trainforge.reproduce import ReproductionPlan
from trainforge.reproduce._checkout import check_out, remove_checkout, write_spec
from trainforge.session import Session
from trainforge.storage.artifacts import open_artifact_store
from trainforge.tracking import CodeRead, open_run, system_of

GIT = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]


def test_the_checkout_holds_the_code_as_the_run_saw_it(store, tmp_path, monkeypatch) -> None:
    root = tmp_path / "repo"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "spec.yaml").write_text("epochs: 4\n")
    (root / "logo.bin").write_bytes(bytes(range(256)))
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run([*GIT, *args], cwd=root, check=True)
    (root / "specs" / "spec.yaml").write_text("epochs: 2\n")
    (root / "logo.bin").write_bytes(bytes(reversed(range(256))))
    (root / "specs" / "contract.yaml").write_text("columns: {}\n")
    monkeypatch.chdir(root / "specs")
    artifacts = open_artifact_store(tmp_path / "artifacts")
    session = Session(Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)}), store, artifacts)
    code = CodeRead(root / "specs", root / "specs" / "spec.yaml",
                    (root / "specs" / "contract.yaml",))
    with open_run("e", session, code=code) as run:
        pass
    seen = {path: (root / path).read_bytes()
            for path in ("specs/spec.yaml", "logo.bin", "specs/contract.yaml")}
    subprocess.run([*GIT, "commit", "-qam", "later"], cwd=root, check=True)  # code moves on
    (root / "specs" / "contract.yaml").write_text("changed since\n")
    recorded = store.get_run(run.run_id)
    entry = system_of(recorded).code
    assert entry is not None
    spec = {"data": {"source": f"{root}/specs/data/*.parquet", "contract":
                     f"{root}/specs/contract.yaml", "version": None},
            "training": {"checkpoint": {"resume": "auto", "location": f"{root}/ckpt"}},
            "registry": {"model_name": "fraud_detector"}, "name": "x"}
    plan = ReproductionPlan(recorded, spec, entry, root, "d" * 64, (), None)
    dest = tmp_path / "checkout"

    check_out(plan, artifacts, dest)
    written = yaml.safe_load(write_spec(plan, dest).read_text())

    assert {path: (dest / path).read_bytes() for path in seen} == seen
    assert written["data"] == {"source": f"{dest}/specs/data/*.parquet",
                               "contract": f"{dest}/specs/contract.yaml", "version": "d" * 64}
    assert written["training"]["checkpoint"] == {"resume": "never",
                                                 "location": f"{root}/ckpt"}  # an output
    assert written["registry"] is None
    assert write_spec(plan, dest).parent == dest / "specs"
    remove_checkout(plan, dest)
    assert not dest.exists()
    listed = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    assert listed.count("worktree ") == 1


def test_changes_that_do_not_apply_leave_no_checkout(store, tmp_path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run([*GIT, *args], cwd=root, check=True)
    (root / "a.txt").write_text("two\n")
    artifacts = open_artifact_store(tmp_path / "artifacts")
    session = Session(Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)}), store, artifacts)
    with open_run("e", session, code=CodeRead(root)) as run:
        pass
    artifacts.put_bytes(run.run_id, "environment/git.diff", b"not a patch at all\n")
    recorded = store.get_run(run.run_id)
    entry = system_of(recorded).code
    assert entry is not None and entry.diff
    plan = ReproductionPlan(recorded, {}, entry, root, "d" * 64, (), None)

    with pytest.raises(TrainforgeError, match="git apply"):
        check_out(plan, artifacts, tmp_path / "checkout")

    assert not (tmp_path / "checkout").exists()
    listed = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    assert listed.count("worktree ") == 1
