"""What a pipeline run will execute, decided before any run exists: the resolved spec, where it
came from, its DAG and its identity (`spec_hash`).

Deciding imports no torch and no pandas beyond what the checks of `_checks` need (the DAG's
steps are imported by `PipelinePlan.dag`), so `trainforge validate` stays fast.

`spec_hash` identifies what a spec trains: the resolved spec without the settings that cannot
change the result (how a run resumes, stops and reports: `RESULT_NEUTRAL`) and without
credentials (never dumped). `resume: auto` continues an unfinished run with the same hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainforge.config import (
    KEEP_CREDENTIALS,
    PipelineSpec,
    apply_overrides,
    load_spec,
    parse_model,
    redact_argument,
)
from trainforge.pipeline._checks import check_spec
from trainforge.train import PreemptionNotice

if TYPE_CHECKING:
    from trainforge.orchestration import Dag
    from trainforge.storage.contracts import RegistryStore
    from trainforge.train import Callback

# Dotted spec paths that change how a run resumes, stops or reports, never what it trains.
RESULT_NEUTRAL = (
    "training.checkpoint.resume",
    "training.checkpoint.preempt_on",
    "training.checkpoint.async_save",
    "training.progress",
    "training.log_every_n_steps",
    "training.profiler",
    "tracking",
)
SPEC_OBJECT = "<PipelineSpec object>"  # the source named in errors about a spec given as object


@dataclass(frozen=True)
class PipelinePlan:
    """A checked spec ready to run. `source` is the spec file (None for a spec object),
    `overrides` are recorded redacted, `code_dir` is where the git state is read."""

    spec: PipelineSpec
    source: Path | None
    overrides: tuple[str, ...]
    spec_hash: str

    @property
    def code_dir(self) -> Path:
        return self.source.resolve().parent if self.source is not None else Path.cwd()

    def dag(self, registry: RegistryStore | None, callbacks: Sequence[Callback] = (),
            preemption: PreemptionNotice | None = None) -> Dag:
        from trainforge.pipeline._dag import build_training_dag

        return build_training_dag(self.spec, registry, callbacks, preemption)

    def preemption_notice(self) -> PreemptionNotice:
        """A notice of the spec's `training.checkpoint.preempt_on` signals (not installed)."""
        return PreemptionNotice(self.spec.training.checkpoint.preempt_on)

    def system_record(self) -> dict[str, Any]:
        """The `spec` entry of the run's system namespace: what it was started from."""
        return {"spec": {"path": None if self.source is None else str(self.source),
                         "overrides": [redact_argument(o) for o in self.overrides]}}


def plan_pipeline(
    spec: PipelineSpec | str | Path, overrides: Sequence[str] | None = None
) -> PipelinePlan:
    """Load (a path) or take (a `PipelineSpec`) the spec, apply `overrides` and run the
    cross-section checks; `SpecError` naming the file (or the spec object) and field."""
    overrides = tuple(overrides or ())
    if isinstance(spec, PipelineSpec):
        resolved = parse_model(PipelineSpec, apply_overrides(
            spec.model_dump(context={KEEP_CREDENTIALS: True}), list(overrides), SPEC_OBJECT),
            SPEC_OBJECT) if overrides else spec
        check_spec(resolved, SPEC_OBJECT)
        return PipelinePlan(resolved, None, overrides, spec_hash(resolved))
    resolved = load_spec(spec, list(overrides))
    check_spec(resolved, spec)
    return PipelinePlan(resolved, Path(spec), overrides, spec_hash(resolved))


def load_checked_spec(path: str | Path, overrides: Sequence[str] | None = None) -> PipelineSpec:
    """Load a spec and run the cross-section checks: what `trainforge validate` does."""
    return plan_pipeline(path, overrides).spec


def spec_hash(spec: PipelineSpec) -> str:
    """sha256 of the canonical JSON of what `spec` trains (see the module docstring)."""
    data = spec.model_dump(mode="json")
    for path in RESULT_NEUTRAL:
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node.get(key) or {}
        node.pop(last, None)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
