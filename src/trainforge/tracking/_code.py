"""The code a run ran, recorded so that it can be checked out again (`trainforge reproduce`).

A run started inside a git repository records its `system.code` entry (`CodeEntry`):

    repository   the repository's root folder
    remote       origin's URL (any password masked), where the commit can be fetched from
    commit       HEAD when the run started
    workdir      the working directory, relative to the root (absolute when outside it)
    spec         the spec file, relative to the root (None: no spec file)
    diff         whether the tracked files differed from HEAD: the difference is the run's
                 artifact `environment/git.diff` (`git diff --binary HEAD`: binary files too)
    untracked    the files the run read that git does not track (its data contract, the
                 modules imported from the repository by the run's start; never the spec
                 file, where a credential may be written: a reproduction runs the recorded
                 resolved spec, which holds none), by path relative to the root: their
                 sha256, each stored once under `code/objects/` of the artifact root

and, beside them, the installed packages as `environment/requirements.txt` (pip's format)
and the repository's `constraints.txt` when it has one: the lock.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from trainforge.config import mask_url_password
from trainforge.storage.artifacts import ArtifactStore
from trainforge.storage.objects import ObjectStore
from trainforge.tracking._system import CodeEntry

CODE_OBJECTS = "code/objects"
DIFF_ARTIFACT = "environment/git.diff"
REQUIREMENTS_ARTIFACT = "environment/requirements.txt"
LOCK_FILES = ("constraints.txt",)  # a repository's lock, stored as `environment/<name>`


@dataclass(frozen=True)
class CodeRead:
    """Where a run's code is read: `directory` (inside the repository, if any), the spec file
    it runs (None: none; its path is recorded, its content is not) and other files it reads
    (a data contract)."""

    directory: Path = Path(".")
    spec: Path | None = None
    reads: tuple[Path, ...] = ()


@dataclass(frozen=True)
class GitState:
    """HEAD, whether tracked files changed and the change (`git diff --binary HEAD`), the
    repository's root and origin's URL; `commit` None outside git."""

    commit: str | None
    dirty: bool | None
    diff: bytes = b""
    root: Path | None = None
    remote: str | None = None


def git_state(directory: str | Path = ".") -> GitState:
    """The git state of the repository holding `directory` (an empty state outside git)."""
    try:
        root = Path(_git(directory, "rev-parse", "--show-toplevel").decode().strip()).resolve()
        commit = _git(directory, "rev-parse", "HEAD").decode().strip()
        status = _git(directory, "status", "--porcelain", "--untracked-files=no")
        diff = _git(directory, "diff", "HEAD", "--binary", "--no-color") if status else b""
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return GitState(None, None)
    try:
        remote: str | None = mask_url_password(
            _git(directory, "remote", "get-url", "origin").decode().strip())
    except subprocess.CalledProcessError:
        remote = None
    return GitState(commit, bool(status.strip()), diff, root, remote)


def record_code(git: GitState, artifacts: ArtifactStore, run_id: str, code: CodeRead,
                packages: Mapping[str, str]) -> CodeEntry | None:
    """Store what checks the run's code out again (the diff, the untracked files among what
    `code` reads and the modules imported so far, the lock: the installed `packages`) and
    return its `code` entry; None outside git."""
    if git.commit is None or git.root is None:
        return None
    root = git.root
    untracked = {}
    for path in untracked_files(root, code.reads, imported_modules()):
        untracked[path.as_posix()] = store_object(artifacts.objects, (root / path).read_bytes())
    if git.diff:
        artifacts.put_bytes(run_id, DIFF_ARTIFACT, git.diff)
    artifacts.put_bytes(run_id, REQUIREMENTS_ARTIFACT, "".join(
        f"{name}=={version}\n" for name, version in packages.items()).encode())
    for name in LOCK_FILES:
        if (root / name).is_file():
            artifacts.put_file(run_id, root / name, f"environment/{name}")
    return CodeEntry(repository=str(root), remote=git.remote, commit=git.commit,
                     workdir=relative_to_root(Path.cwd(), root),
                     spec=None if code.spec is None else relative_to_root(code.spec, root),
                     diff=bool(git.diff), untracked=untracked)


def untracked_files(root: Path, reads: Iterable[Path], modules: Iterable[Path]) -> list[Path]:
    """The files under `root` that git does not track among `reads` (files the run read, even
    ones git ignores) and `modules` (imported: those git ignores, such as a virtual
    environment's, and those of the interpreter's installation left out), as paths relative
    to `root`, sorted."""
    read = _inside(root, reads)
    installed = [Path(p).resolve() for p in {sys.prefix, sys.exec_prefix, sys.base_prefix}]
    imported = _inside(root, (m for m in modules
                              if not any(m.resolve().is_relative_to(p) for p in installed)))
    found: set[Path] = set()
    if read:
        tracked = _paths(_git(root, "ls-files", "-z", "--", *map(str, read)))
        found |= set(read) - tracked
    if imported:
        found |= _paths(_git(root, "ls-files", "-z", "--others", "--exclude-standard", "--",
                             *map(str, imported)))
    return sorted(found)


def imported_modules() -> list[Path]:
    """The files of the modules imported in this process."""
    files = (getattr(module, "__file__", None) for module in list(sys.modules.values()))
    return [Path(file) for file in files if isinstance(file, str)]


def store_object(objects: ObjectStore, data: bytes) -> str:
    """Store `data` under its sha256 in `code/objects/` (once); return the sha256."""
    sha256 = hashlib.sha256(data).hexdigest()
    key = code_object_key(sha256)
    if not objects.exists(key):
        objects.write(key, data)
    return sha256


def code_object_key(sha256: str) -> str:
    return f"{CODE_OBJECTS}/{sha256[:2]}/{sha256}"


def relative_to_root(path: Path, root: Path) -> str:
    """`path` relative to `root` in POSIX form, or absolute when it lies outside."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        return str(resolved)


def _inside(root: Path, candidates: Iterable[Path]) -> list[Path]:
    """The existing files among `candidates` that lie under `root` (outside `.git`), relative
    to it, sorted."""
    inside = set()
    for candidate in candidates:
        path = candidate.resolve()
        if path.is_file() and path.is_relative_to(root) and ".git" not in path.parts:
            inside.add(path.relative_to(root))
    return sorted(inside)


def _paths(listing: bytes) -> set[Path]:
    return {Path(os.fsdecode(name)) for name in listing.split(b"\0") if name}


def _git(directory: str | Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=directory, capture_output=True, check=True,
                          timeout=30).stdout
