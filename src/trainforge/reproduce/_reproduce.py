"""`reproduce_run`: a run replayed from its record alone, and compared with it.

    plan_reproduction   the record checked: all that lacks refused before anything runs
    check_out           the commit as a worktree, the diff applied, the untracked files written
    write_spec          the resolved spec, pinned to the run's data version, into the checkout
    _run_again          `python -m trainforge run` of that spec in the run's working folder
                        (the checkout's), in a process of its own with this session's
                        database and artifact root, recording `system.reproduces`
    compare             params, data version, environment, every metric series step by step
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trainforge.errors import NotReproducible, TrainforgeError
from trainforge.reproduce._checkout import check_out, remove_checkout, working_folder, write_spec
from trainforge.reproduce._compare import Comparison, compare
from trainforge.reproduce._record import ReproductionPlan, plan_reproduction
from trainforge.session import Session

GATE_STOPPED = 3  # `trainforge run`: the run completed, a gate stopped its registration


@dataclass(frozen=True)
class Reproduction:
    """A reproduction done: the new run's id, where its code was checked out (None: removed)
    and its comparison with the original."""

    run_id: str
    checkout: Path | None
    comparison: Comparison


def reproduce_run(run_id: str, session: Session, *, given: Sequence[str] = (),
                  strict: bool = False, into: Path | None = None) -> Reproduction:
    """Reproduce the stored run `run_id` as a new run linked to it and compare the two.

    `given`: values for the overrides the record holds redacted (`KEY=VALUE`); `strict`
    refuses a package that differs from the run's; `into`: an empty or missing folder the
    code is checked out into and kept (default: a temporary one, removed). `NotReproducible`
    names every missing part before anything runs; `TrainforgeError` when the reproduction's
    run fails.
    """
    run = session.store.get_run(run_id)
    if into is not None and into.exists() and (not into.is_dir() or any(into.iterdir())):
        raise NotReproducible(run.run_id, [f"an empty folder to check out into: {into} "
                                           "holds files"])
    plan = plan_reproduction(run, session, given, strict)
    if into is not None:
        temporary, dest = None, into.resolve()
    else:
        temporary = Path(tempfile.mkdtemp(prefix=f"trainforge-reproduce-{run.run_id[:12]}-"))
        dest = temporary / "code"
    try:
        check_out(plan, session.artifacts, dest)
        try:
            new_id = _run_again(plan, session, dest)
            comparison = compare(run, session.store.get_run(new_id), session.store, str(dest))
        finally:
            if temporary is not None:
                remove_checkout(plan, dest)
    finally:
        if temporary is not None:
            temporary.rmdir()
    return Reproduction(new_id, None if temporary is not None else dest, comparison)


def _run_again(plan: ReproductionPlan, session: Session, dest: Path) -> str:
    """Run the recorded spec from the checkout; the new run's id."""
    spec = write_spec(plan, dest)
    launch = ["--nproc-per-node", str(plan.nproc_per_node)] if plan.nproc_per_node else []
    command = [sys.executable, "-m", "trainforge", "run", str(spec), *plan.given, "--json",
               "--reproduces", plan.run.run_id, *launch]
    result = subprocess.run(command, cwd=working_folder(plan, dest),  # in another folder
                            env={**os.environ, **session.settings.as_env()},
                            stdout=subprocess.PIPE, text=True)
    if result.returncode not in (0, GATE_STOPPED):
        raise TrainforgeError(f"the reproduction of run {plan.run.run_id} failed (exit "
                              f"{result.returncode}); its error is above")
    return str(json.loads(result.stdout)["run_id"])
