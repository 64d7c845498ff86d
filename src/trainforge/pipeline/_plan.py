"""What a pipeline run will execute, decided before any run exists: the resolved spec, where it
came from, its DAG and its identity (`spec_hash`, see `_identity`).

Deciding imports no torch and no pandas beyond what the checks of `_checks` need (the DAG's
steps are imported by `PipelinePlan.dag`), so `trainforge validate` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainforge.config import (
    KEEP_CREDENTIALS,
    Credentials,
    PipelineSpec,
    apply_overrides,
    load_spec,
    parse_model,
    redact_argument,
)
from trainforge.pipeline._checks import check_spec
from trainforge.pipeline._identity import spec_hash
from trainforge.tracking import CodeRead, DataEntry, SpecEntry, SystemRecord
from trainforge.train import PreemptionNotice

if TYPE_CHECKING:
    from trainforge.orchestration import Dag, Step
    from trainforge.pipeline._alerts import Alert
    from trainforge.storage.contracts import RegistryStore
    from trainforge.train import Callback
    from trainforge.versioning import DataRepository

SPEC_OBJECT = "<PipelineSpec object>"  # the source named in errors about a spec given as object
DATA_STEPS = ("ingest", "validate", "split", "features")


@dataclass(frozen=True)
class PipelinePlan:
    """A checked spec ready to run. `source` is the spec file (None for a spec object),
    `overrides` are recorded redacted, `code_dir` is where the git state is read; `steps` are
    steps given in Python that join the chain after the spec's own."""

    spec: PipelineSpec
    source: Path | None
    overrides: tuple[str, ...]
    spec_hash: str
    steps: tuple[Step, ...] = ()

    @property
    def code_dir(self) -> Path:
        return self.source.resolve().parent if self.source is not None else Path.cwd()

    def code(self) -> CodeRead:
        """Where the run's code is read: the spec's folder, the spec and its contract."""
        contract = self.spec.data.contract
        reads = (self.code_dir / contract,) if contract and "://" not in contract else ()
        return CodeRead(self.code_dir, self.source, reads)

    def dag(self, registry: RegistryStore | None, callbacks: Sequence[Callback] = (),
            preemption: PreemptionNotice | None = None,
            data: DataRepository | None = None, alert: Alert | None = None,
            quality: bool = True, credentials: Credentials | None = None) -> Dag:
        from trainforge.pipeline._dag import build_training_dag

        return build_training_dag(self.spec, registry, callbacks, preemption, data, alert,
                                  quality, str(self.source or SPEC_OBJECT), self.steps,
                                  credentials)

    def data_dag(self, data: DataRepository | None = None) -> Dag:
        """The chain's ingest, validate, split and features steps alone: what prepares the
        dataset (a PBT study's, once; taken from the cache of any run of the same data).
        `data` hashes the files read and reads pinned data versions."""
        return self.dag(None, data=data, quality=False).only(DATA_STEPS)

    def preemption_notice(self) -> PreemptionNotice:
        """A notice of the spec's `training.checkpoint.preempt_on` signals (not installed)."""
        return PreemptionNotice(self.spec.training.checkpoint.preempt_on)

    def source_record(self) -> dict[str, Any]:
        """What the pipeline run was started from (its `source`): the spec file and
        overrides, by which `trainforge resume` starts it again."""
        return {"spec": {"path": None if self.source is None else str(self.source),
                         "overrides": [redact_argument(o) for o in self.overrides]}}

    def system_record(self) -> SystemRecord:
        """The `spec`, `resolved_spec` and `data` entries of the run's system namespace: what
        it was started from, the spec that resolved to, and what its model checks records
        against."""
        data = self.spec.data
        redacted = [o.partition("=")[0] for o in self.overrides if redact_argument(o) != o]
        return SystemRecord(
            spec=SpecEntry(**self.source_record()["spec"], redacted=redacted),
            resolved_spec=self.spec.model_dump(mode="json"),
            data=DataEntry(contract=data.contract, target=data.target))


def plan_pipeline(
    spec: PipelineSpec | str | Path, overrides: Sequence[str] | None = None,
    steps: Sequence[Step] = (),
) -> PipelinePlan:
    """Load (a path) or take (a `PipelineSpec`) the spec, apply `overrides` and run the
    cross-section checks; `SpecError` naming the file (or the spec object) and field. `steps`
    (given in Python) join the chain, checked with the spec's own."""
    overrides = tuple(overrides or ())
    if isinstance(spec, PipelineSpec):
        resolved = parse_model(PipelineSpec, apply_overrides(
            spec.model_dump(context={KEEP_CREDENTIALS: True}), list(overrides), SPEC_OBJECT),
            SPEC_OBJECT) if overrides else spec
        check_spec(resolved, SPEC_OBJECT)
        plan = PipelinePlan(resolved, None, overrides, spec_hash(resolved), tuple(steps))
    else:
        resolved = load_spec(spec, list(overrides))
        check_spec(resolved, spec)
        plan = PipelinePlan(resolved, Path(spec), overrides, spec_hash(resolved),
                            tuple(steps))
    _check_user_steps(plan)
    return plan


def _check_user_steps(plan: PipelinePlan) -> None:
    """The spec's own `steps` wired into the chain, or `SpecError` naming the spec, the step
    and the field (a function that does not import, an input nobody produces, a cycle, a
    name or output the chain has). Their modules import from the working directory and the
    spec's folder, as `python -m` would."""
    if not plan.spec.steps and not plan.steps:
        return
    from trainforge.errors import SpecError, TrainforgeError

    for folder in (Path.cwd(), plan.code_dir):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    try:
        plan.dag(None)
    except SpecError as exc:
        raise SpecError([problem if problem.startswith(str(plan.source or SPEC_OBJECT))
                         else f"{plan.source or SPEC_OBJECT}: {problem}"
                         for problem in exc.problems]) from exc
    except TrainforgeError as exc:
        raise SpecError([f"{plan.source or SPEC_OBJECT}: steps: {exc}"]) from exc



def load_checked_spec(path: str | Path, overrides: Sequence[str] | None = None) -> PipelineSpec:
    """Load a spec and run the cross-section checks: what `trainforge validate` does."""
    return plan_pipeline(path, overrides).spec
