"""What a reproduction needs, read from the run's record and checked before anything runs.

`plan_reproduction` reads the run's `system` entries (the resolved spec, `code`, `spec`, the
launch shape) and its data version, and checks that every part a replay needs is there: the
commit in a repository here (the recorded one, else the current folder's), the recorded diff
and untracked files in the artifact store, the data version's manifest and objects, a value
for each override recorded redacted, and (`strict`) the same packages as the run's. All that
lacks is refused at once, as `NotReproducible` listing each part.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainforge.entities import Run
from trainforge.errors import ArtifactError, DataError, NotReproducible, ObjectStoreError
from trainforge.session import Session
from trainforge.tracking import (
    DIFF_ARTIFACT,
    CodeEntry,
    code_object_key,
    installed_packages,
    system_of,
)
from trainforge.versioning import DataRepository, object_key, open_repository


@dataclass(frozen=True)
class ReproductionPlan:
    """A run's record checked for a replay: its resolved spec, code entry, the repository
    that holds its commit here, its data version, the overrides given for redacted values,
    and its launch's processes per node (None: it ran in one process)."""

    run: Run
    spec: dict[str, Any]
    code: CodeEntry
    repository: Path
    data_version_id: str
    given: tuple[str, ...]
    nproc_per_node: int | None


def plan_reproduction(run: Run, session: Session, given: Sequence[str] = (),
                      strict: bool = False) -> ReproductionPlan:
    """The checked plan to reproduce `run`; `NotReproducible` naming each missing part.
    `given`: `KEY=VALUE` overrides for the values the record holds redacted (and only
    those)."""
    system = system_of(run)
    missing: list[str] = []
    if system.resolved_spec is None:
        missing.append("its resolved spec: only pipeline runs (`trainforge run`) record one")
    code = system.code
    repository = None
    if code is None:
        missing.append("its code: it did not run inside a git repository")
    else:
        repository = _repository_holding(code.commit, [Path(code.repository), Path.cwd()])
        if repository is None:
            where = code.remote or "its remote"
            missing.append(f"commit {code.commit} is in no repository here (not at "
                           f"{code.repository}, nor in the current folder's): fetch it "
                           f"from {where}")
    try:
        if code is not None:
            missing += _stored_code(run, code, session)
        missing += _stored_data(run, open_repository(session.settings, session.store))
    except (ArtifactError, ObjectStoreError) as exc:  # a bucket without credentials here
        missing.append(f"read access to the artifact root {session.artifacts.root_uri}: {exc}")
    missing += _given_values(run, given)
    if system.distributed is not None and system.distributed.nnodes > 1:
        missing.append(f"a single node: it trained on {system.distributed.nnodes} nodes")
    if strict:
        missing += [f"the same packages (--strict): {difference}"
                    for difference in package_differences(run.environment)]
    if missing:
        raise NotReproducible(run.run_id, missing)
    assert system.resolved_spec is not None and code is not None and repository is not None
    assert run.data_version_id is not None
    return ReproductionPlan(
        run, system.resolved_spec, code, repository, run.data_version_id, tuple(given),
        system.distributed.nproc_per_node if system.distributed is not None else None)


def package_differences(recorded: Mapping[str, Any]) -> list[str]:
    """How the installed packages differ from those of a run's recorded environment."""
    before: dict[str, str] = dict(recorded.get("packages") or {})
    now = installed_packages()
    return ([f"{name} {before[name]} recorded, {now[name]} here"
             for name in sorted(before.keys() & now.keys()) if before[name] != now[name]]
            + [f"{name} {before[name]} recorded, not installed here"
               for name in sorted(before.keys() - now.keys())]
            + [f"{name} {now[name]} installed here, not recorded"
               for name in sorted(now.keys() - before.keys())])


def _repository_holding(commit: str, folders: Sequence[Path]) -> Path | None:
    """The root of the first repository holding one of `folders` that has `commit`."""
    for folder in folders:
        root = _root_holding(folder, commit)
        if root is not None:
            return root
    return None


def _root_holding(folder: Path, commit: str) -> Path | None:
    """The root of the git repository holding `folder`, if it has `commit`."""
    if not folder.is_dir():
        return None
    try:
        root = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, check=True,
                              capture_output=True, text=True, timeout=30).stdout.strip()
        subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=root,
                       check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    return Path(root)


def _stored_code(run: Run, code: CodeEntry, session: Session) -> list[str]:
    """What lacks of the recorded changes: the diff artifact, the untracked files' objects."""
    missing = []
    if code.diff and DIFF_ARTIFACT not in session.artifacts.list_names(run.run_id):
        missing.append(f"its changes to the commit: artifact {DIFF_ARTIFACT} is not stored")
    objects = session.artifacts.objects
    missing += [f"untracked file {path}: its content ({sha256[:12]}) is not stored"
                for path, sha256 in code.untracked.items()
                if not objects.exists(code_object_key(sha256))]
    return missing


def _stored_data(run: Run, data: DataRepository) -> list[str]:
    """What lacks of the run's data version: the version, its manifest, its files' objects."""
    if run.data_version_id is None:
        return ["its data version: the run recorded none"]
    try:
        manifest = data.manifest(run.data_version_id)
    except DataError:
        return [f"data version {run.data_version_id}: its files were not stored (the run "
                "had `data.snapshot: false`, or read them before runs pinned their data)"]
    lost = [entry.name for entry in manifest.files
            if not data.objects.exists(object_key(entry.sha256))]
    return ([f"data version {run.data_version_id}: {len(lost)} of its files are not stored "
             f"(first: {lost[0]})"] if lost else [])


def _given_values(run: Run, given: Sequence[str]) -> list[str]:
    """Overrides given for values recorded redacted: each redacted key needs one, no other
    key may have one."""
    spec = system_of(run).spec
    redacted = set(spec.redacted) if spec is not None else set()
    keys = {override.partition("=")[0] for override in given}
    missing = [f"a value for {key}: the override was recorded redacted (give it: "
               f"`trainforge reproduce {run.run_id} {key}=VALUE`)"
               for key in sorted(redacted - keys)]
    missing += [f"no override of {key}: only the overrides recorded redacted are given "
                f"again ({', '.join(sorted(redacted)) or 'none here'})"
                for key in sorted(keys - redacted)]
    return missing
