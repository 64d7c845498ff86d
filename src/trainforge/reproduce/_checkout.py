"""The recorded code checked out again, and the recorded spec written into it.

`check_out` makes a detached git worktree of the run's commit in an empty folder, applies the
recorded diff (`git apply`, binary files too) and writes the untracked files the run read
from their stored objects. `write_spec` writes the run's resolved spec there as YAML: its paths
under the recorded repository point into the checkout, `data.version` pins the run's data
version, and `training.checkpoint.resume` is `never` (a reproduction starts from step 0).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from trainforge.errors import TrainforgeError
from trainforge.reproduce._record import ReproductionPlan
from trainforge.storage.artifacts import ArtifactStore
from trainforge.tracking import DIFF_ARTIFACT, code_object_key

MOVED = ("data", "steps")  # the sections whose paths are inputs read from the repository


def check_out(plan: ReproductionPlan, artifacts: ArtifactStore, dest: Path) -> None:
    """The run's code in `dest` (missing or empty): its commit as a worktree of the
    repository, with the recorded changes and untracked files (removed again when they
    cannot be applied)."""
    _git(plan.repository, "worktree", "add", "--quiet", "--detach", str(dest), plan.code.commit)
    try:
        if plan.code.diff:
            _git(dest, "apply", "--binary", "--whitespace=nowarn", "-",
                 input=artifacts.get_bytes(plan.run.run_id, DIFF_ARTIFACT))
        for path, sha256 in plan.code.untracked.items():
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(artifacts.objects.read(code_object_key(sha256)))
    except BaseException:
        remove_checkout(plan, dest)  # no half-made checkout is left
        raise


def remove_checkout(plan: ReproductionPlan, dest: Path) -> None:
    """Remove the worktree `check_out` made (its files and the repository's record of it)."""
    _git(plan.repository, "worktree", "remove", "--force", str(dest))


def write_spec(plan: ReproductionPlan, dest: Path) -> Path:
    """The run's resolved spec, pinned to its data version and its input paths moved into
    `dest`, written beside the checkout's spec file (or in its working folder); its path."""
    spec = {**plan.spec, **{section: moved(plan.spec[section], plan.code.repository, str(dest))
                            for section in MOVED if section in plan.spec}}
    spec["data"]["version"] = plan.data_version_id
    spec["training"]["checkpoint"]["resume"] = "never"
    spec["registry"] = None  # a check, not a new model: no version registered, no deploy hook
    recorded = plan.code.spec
    folder = dest / Path(recorded).parent if recorded and not os.path.isabs(recorded) \
        else working_folder(plan, dest)
    folder.mkdir(parents=True, exist_ok=True)  # an untracked spec's folder may not be there
    path = folder / f".reproduce-{plan.run.run_id[:12]}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def working_folder(plan: ReproductionPlan, dest: Path) -> Path:
    """The run's working folder in the checkout (its root when the run worked outside the
    repository)."""
    workdir = plan.code.workdir
    return dest if os.path.isabs(workdir) else dest / workdir


def moved(value: Any, root: str, dest: str) -> Any:
    """`value` with each string that is a path under `root` moved under `dest`."""
    if isinstance(value, dict):
        return {key: moved(item, root, dest) for key, item in value.items()}
    if isinstance(value, list):
        return [moved(item, root, dest) for item in value]
    if isinstance(value, str) and (value == root or value.startswith(root.rstrip("/") + "/")):
        return dest + value[len(root.rstrip("/")):]
    return value


def _git(folder: Path, *args: str, input: bytes | None = None) -> None:
    result = subprocess.run(["git", *args], cwd=folder, input=input, capture_output=True,
                            timeout=600)
    if result.returncode != 0:
        raise TrainforgeError(f"git {' '.join(args[:2])} in {folder} failed: "
                              f"{result.stderr.decode(errors='replace').strip()}")
