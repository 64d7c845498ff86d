"""A run inside a git repository records where its code lies and enough to check it out again:
the root, origin, commit, working folder, spec path, the binary diff, the untracked files it
read (stored by hash) and the lock."""

from __future__ import annotations

import hashlib
import importlib
import subprocess
import sys
from pathlib import Path

from trainforge.config import Settings
from trainforge.session import Session
from trainforge.storage.artifacts import open_artifact_store
from trainforge.tracking import CodeRead, open_run, system_of

GIT = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]


def _repository(root: Path) -> None:
    root.mkdir()
    (root / "specs").mkdir()
    (root / "specs" / "spec.yaml").write_text("name: x\n")
    (root / "logo.bin").write_bytes(bytes(range(256)))
    (root / "constraints.txt").write_text("numpy==2.0\n")
    (root / ".gitignore").write_text("ignored/\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"],
                 ["remote", "add", "origin", "https://me:hunter2@git.example/x.git"]):
        subprocess.run([*GIT, *args], cwd=root, check=True)


def test_a_run_records_its_code_and_stores_what_git_does_not_hold(store, tmp_path,
                                                                  monkeypatch) -> None:
    root = tmp_path / "repo"
    _repository(root)
    (root / "logo.bin").write_bytes(bytes(reversed(range(256))))  # a binary change
    (root / "specs" / "contract.yaml").write_text("columns: {}\n")  # untracked, read
    (root / "specs" / "notes.txt").write_text("not read\n")  # untracked, not read
    (root / "specs" / "helper_of_code_record.py").write_text("X = 1\n")  # untracked, imported
    (root / "ignored").mkdir()
    (root / "ignored" / "ignored_of_code_record.py").write_text("Y = 1\n")  # git ignores it
    monkeypatch.syspath_prepend(str(root / "specs"))
    monkeypatch.syspath_prepend(str(root / "ignored"))
    for module in ("helper_of_code_record", "ignored_of_code_record"):
        monkeypatch.delitem(sys.modules, module, raising=False)  # the other store's import
        importlib.import_module(module)
    monkeypatch.chdir(root / "specs")
    artifacts = open_artifact_store(tmp_path / "artifacts")
    session = Session(Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)}), store, artifacts)
    code = CodeRead(root / "specs", root / "specs" / "spec.yaml",
                    (root / "specs" / "contract.yaml",))

    with open_run("e", session, code=code) as run:
        pass

    entry = system_of(store.get_run(run.run_id)).code
    assert entry is not None
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=True).stdout.strip()
    contract = (root / "specs" / "contract.yaml").read_bytes()
    assert (entry.repository, entry.commit, entry.workdir, entry.spec, entry.diff) == (
        str(root.resolve()), head, "specs", "specs/spec.yaml", True)
    assert entry.remote == "https://me:***@git.example/x.git"
    assert entry.untracked == {
        "specs/contract.yaml": hashlib.sha256(contract).hexdigest(),
        "specs/helper_of_code_record.py": hashlib.sha256(b"X = 1\n").hexdigest()}
    sha = entry.untracked["specs/contract.yaml"]
    assert artifacts.objects.read(f"code/objects/{sha[:2]}/{sha}") == contract
    assert artifacts.list_names(run.run_id) == [
        "environment/constraints.txt", "environment/git.diff", "environment/requirements.txt"]
    assert artifacts.get_bytes(run.run_id, "environment/constraints.txt") == b"numpy==2.0\n"
    requirements = artifacts.get_bytes(run.run_id, "environment/requirements.txt").decode()
    assert any(line.startswith("torch==") for line in requirements.splitlines())

    checkout = tmp_path / "checkout"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(checkout), head],
                   cwd=root, check=True)
    subprocess.run(["git", "apply", "--binary", "-"], cwd=checkout, check=True,
                   input=artifacts.get_bytes(run.run_id, "environment/git.diff"))
    assert (checkout / "logo.bin").read_bytes() == (root / "logo.bin").read_bytes()


def test_a_run_outside_git_records_no_code(store, tmp_path) -> None:
    artifacts = open_artifact_store(tmp_path / "artifacts")
    session = Session(Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)}), store, artifacts)

    with open_run("e", session, code=CodeRead(tmp_path)) as run:
        pass

    assert system_of(store.get_run(run.run_id)).code is None
    assert artifacts.list_names(run.run_id) == []


def test_an_untracked_spec_is_not_stored_a_credential_may_be_written_in_it(store, tmp_path
                                                                           ) -> None:
    root = tmp_path / "repo"
    _repository(root)
    spec = root / "specs" / "local.yaml"
    spec.write_text("data: {storage_options: {secret: PLANTED-CREDENTIAL}}\n")  # untracked
    artifacts = open_artifact_store(tmp_path / "artifacts")
    session = Session(Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)}), store, artifacts)

    with open_run("e", session, code=CodeRead(root / "specs", spec)) as run:
        pass

    entry = system_of(store.get_run(run.run_id)).code
    assert entry is not None and entry.spec == "specs/local.yaml" and entry.untracked == {}
    stored = (tmp_path / "artifacts").rglob("*")
    assert not any(b"PLANTED-CREDENTIAL" in path.read_bytes() for path in stored
                   if path.is_file())
