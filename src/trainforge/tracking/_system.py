"""A run's `system` namespace, typed: what trainforge records on a run beside the user's params
and tags, and reads back to decide (whether a run still lives, how it resumes, where its
checkpoints are, what export and serving check records
against). Nothing it decides is read from params or tags.

One model, `SystemRecord`, and one writer per entry:

    process          where the run's process is, and who   tracking.process_record
                     started it
    code             where its code lies: repository,     the run's creation (tracking._code)
                     commit, the diff and untracked
                     files stored, the spec's path
    spec             the spec file and overrides run      pipeline's PipelinePlan.system_record
    resolved_spec    the spec they resolved to (secrets   PipelinePlan.system_record
                     masked): what a resume compares,
                     what promotion gates read
    data             the data contract and target         PipelinePlan.system_record
    checkpoint       location and policy (no credentials) pipeline.checkpoint_record
    job              a multi-node job's key               the store's reopen_run, or the run's
                                                          creation by a job's launcher
    resume           the neutral spec changes resumed     the tracked run's opener (tracked_run)
    pipeline_run     the pipeline run it records          the runner's driver of the run
    pipeline_source  where a user pipeline was declared   orchestration's run_steps
    distributed      the launch's shape                   the torchrun launcher
    tuning           the study (and the trial)            tuning's study and trial objective
    pbt              the study, or a member               run_pbt
    reproduces       the run it reproduces                `trainforge reproduce`
    registration     the model registered from elsewhere  registry.register_version

Writers hand `SystemRecord`s to `open_run(system=...)` / `RunHandle.set_system`; the stored
JSON is its entries (`entries()`), merged key by key. `system_of(run)` reads them back; an
entry a later version added is kept in the row and not read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from trainforge.entities import Run

if TYPE_CHECKING:
    from trainforge.config import PipelineSpec


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    keeps_none: ClassVar[bool] = True  # False: a field left None is not written

    def stored(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=not self.keeps_none)


class ProcessEntry(_Entry):
    host: str
    pid: int
    user: str = ""  # who acts in the session that started it ("" before it was recorded)


class SpecEntry(_Entry):
    path: str | None
    overrides: list[str]
    redacted: list[str] = []  # the keys of the overrides whose values were redacted


class CodeEntry(_Entry):
    """Where the run's code lies and what checks it out again (`tracking._code`)."""

    repository: str
    remote: str | None
    commit: str
    workdir: str
    spec: str | None
    diff: bool
    untracked: dict[str, str]


class DataEntry(_Entry):
    """What a served or exported model checks records against: the data contract file the
    run validated with (None: none) and the target column."""

    contract: str | None
    target: str


class CheckpointEntry(_Entry):
    location: str
    policy: dict[str, Any]


class ResumeEntry(_Entry):
    changes: list[list[Any]]


class RegistrationEntry(_Entry):
    """A run recorded for a model registered from elsewhere: what was registered, from where,
    by whom (`registry.register_version`)."""

    model: str
    label: str
    artifact_uri: str
    user: str


class LaunchShape(_Entry):
    nproc_per_node: int
    nnodes: int
    min_nodes: int
    max_restarts: int


class TuningEntry(_Entry):
    keeps_none = False

    study: str
    trial: int | None = None


class PbtEntry(_Entry):
    keeps_none = False

    role: str | None = None
    study: str | None = None
    member: int | None = None


class SystemRecord(BaseModel):
    """The entries of a run's `system` namespace (None: not recorded)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    process: ProcessEntry | None = None
    code: CodeEntry | None = None
    spec: SpecEntry | None = None
    resolved_spec: dict[str, Any] | None = None
    data: DataEntry | None = None
    checkpoint: CheckpointEntry | None = None
    job: str | None = None
    resume: ResumeEntry | None = None
    pipeline_run: str | None = None
    pipeline_source: dict[str, Any] | None = None
    distributed: LaunchShape | None = None
    tuning: TuningEntry | None = None
    pbt: PbtEntry | None = None
    reproduces: str | None = None
    registration: RegistrationEntry | None = None

    def entries(self) -> dict[str, Any]:
        """The entries recorded (not None), as the stored JSON holds them."""
        return {name: value.stored() if isinstance(value, _Entry) else value
                for name in type(self).model_fields
                if (value := getattr(self, name)) is not None}

    def merged(self, other: SystemRecord) -> SystemRecord:
        """These entries with `other`'s recorded ones over them."""
        return SystemRecord.model_validate({**self.entries(), **other.entries()})


def system_of(run: Run) -> SystemRecord:
    """`run`'s system entries as recorded."""
    return SystemRecord.model_validate(run.system)


def recorded_spec_of(run: Run) -> PipelineSpec | None:
    """The spec `run` resolved and recorded for itself, read with today's schema (fields
    added since take their defaults); None when it recorded none or it no longer validates."""
    from trainforge.config import recorded_spec  # the spec's models, only when read

    resolved = system_of(run).resolved_spec
    return recorded_spec(resolved) if resolved else None
