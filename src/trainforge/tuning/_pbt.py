"""Population-based training over trainforge's own checkpoints: `run_pbt`.

    plan        spec file or object + overrides → checked spec, then the PBT checks
    study run   one tracked run (params: the spec); each member a run nested under it
                (params: its hyperparameters; system: study, member index, checkpoints)
    data        ingest → validate → split → features once, recorded on the study run
    interval    each member in turn: newest checkpoint loaded with its hyperparameters,
                trained to the interval's end, scored on the validation split, saved
    exploit     the bottom quantile each draw a top-quantile donor; the donor's checkpoint of
                that step is pinned against retention, verified, copied byte for byte as the
                recipient's newest, read back and checked to hold the donor's weights; the
                recipient takes the donor's hyperparameters, explored. A donor without a valid
                checkpoint of that step (its save failed, or the checkpoint is gone or
                corrupt) is not copied: the recipient keeps its own weights
    lineage     `pbt/lineage.json` and `pbt/lineage.png` on the study run; a `pbt` tag on
                each member run listing the exploits it received

Exploits happen between intervals only, never after the last one. Every member starts from
the same initial weights (`training.seed`); hyperparameters set them apart.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trainforge.config import PbtSpec, PipelineSpec, TuningSpec
from trainforge.entities import Pipeline, Run
from trainforge.errors import CheckpointError, RunFailed, TrainforgeError
from trainforge.orchestration import drive
from trainforge.pipeline import (
    Dataset,
    PipelinePlan,
    checkpoint_location,
    checkpoint_record,
    plan_pipeline,
)
from trainforge.session import Session
from trainforge.tracking import PbtEntry, RunHandle, SystemRecord, open_run
from trainforge.train import Trainer
from trainforge.train.checkpoint import CheckpointInfo, CheckpointManager
from trainforge.tuning._pbt_checks import check_pbt_spec
from trainforge.tuning._pbt_lineage import (
    LINEAGE_ARTIFACT,
    PLOT_ARTIFACT,
    ExploitRecord,
    IntervalScores,
    Lineage,
    plot_lineage,
)
from trainforge.tuning._pbt_member import PbtMember, StopAt, score, weights_sha256
from trainforge.tuning._pbt_select import plan_exploits, rank
from trainforge.tuning._pbt_space import Values, explore, initial_values, spec_with
from trainforge.versioning import open_repository

SPEC_OBJECT = "<PipelineSpec object>"


@dataclass(frozen=True)
class PbtMemberResult:
    """A member at the end: its run, final hyperparameters and objective."""

    index: int
    run_id: str
    values: dict[str, Any]
    score: float


@dataclass(frozen=True)
class PbtResult:
    """The study run (ended), every member (best first) and the lineage."""

    study: Run
    members: list[PbtMemberResult]
    lineage: Lineage

    @property
    def best(self) -> PbtMemberResult:
        return self.members[0]


class PbtListener:
    """Hooks into a running study (progress, tests); every method does nothing by default.
    They run on the study's thread, at the moments their names say."""

    def on_member_loaded(self, member: PbtMember, step: int, trainer: Trainer) -> None:
        """`member`'s trainer holds its checkpoint of `step` (0: fresh) before an interval."""

    def on_interval_end(self, interval: int, step: int, scores: Mapping[int, float],
                        members: Sequence[PbtMember]) -> None:
        """Every member trained to `step`, was scored and saved; no exploit has happened."""

    def on_exploit(self, record: ExploitRecord) -> None:
        """A planned exploit happened (right after the copy) or was refused."""


def run_pbt(
    spec: PipelineSpec | str | Path,
    overrides: Sequence[str] | None = None,
    *,
    session: Session | None = None,
    listener: PbtListener | None = None,
) -> PbtResult:
    """Train the population `tuning.pbt` declares (see the module docstring) and return it.

    Spec problems raise `SpecError` before any run exists (`tuning.pbt` missing, a space path
    that cannot change mid-training, ...); a later trainforge error ends the study and its
    members `failed` and is raised as `RunFailed` naming the study run.
    """
    plan = plan_pipeline(spec, overrides)
    source = str(plan.source) if plan.source is not None else SPEC_OBJECT
    tuning, pbt = check_pbt_spec(plan.spec, source)
    study = _Study(plan, source, tuning, pbt, session or Session.open(),
                   listener or PbtListener())
    return study.run()


@dataclass
class _Study:
    plan: PipelinePlan
    source: str
    tuning: TuningSpec
    pbt: PbtSpec
    session: Session
    listener: PbtListener
    members: list[PbtMember] = field(default_factory=list)
    intervals: list[IntervalScores] = field(default_factory=list)
    exploits: list[ExploitRecord] = field(default_factory=list)
    save_failures: dict[tuple[int, int], str] = field(default_factory=dict)  # (member, step)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.tuning.seed)

    def run(self) -> PbtResult:
        handle = self._open_study()
        try:
            with handle, ExitStack() as stack:
                dataset = self._prepare(handle)
                for index in range(self.pbt.population):
                    self.members.append(self._open_member(handle, index, stack))
                self._train(dataset)
                self._record(handle)
        except TrainforgeError as exc:
            raise RunFailed(handle.run_id, exc) from exc
        return self._result(handle.run_id)

    def _open_study(self) -> RunHandle:
        spec, session = self.plan.spec, self.session
        return open_run(
            spec.experiment_name, session, params=spec.model_dump(mode="json"),
            tags={"pbt": {"population": self.pbt.population,
                          "objective": self.tuning.objective.metric}},
            system=self.plan.system_record().merged(SystemRecord(pbt=PbtEntry(role="study"))),
            code=self.plan.code(),
        )

    def _prepare(self, study: RunHandle) -> Dataset:
        """ingest → validate → split → features, once for the population, as the study's
        pipeline run (its steps taken from the cache of a run of the same data)."""
        session = self.session
        dag = self.plan.data_dag(open_repository(session.settings, session.store))
        session.store.upsert_pipeline(  # the chain's wiring, as a run of the spec records it
            Pipeline(dag.name, dag.name, self.plan.dag(None).describe()))
        dataset: Dataset = drive(dag, session, study,
                                 source=self.plan.source_record()).value("dataset")
        return dataset

    def _open_member(self, study: RunHandle, index: int, stack: ExitStack) -> PbtMember:
        """A member's run (ended by `stack`: failed if the study fails) and checkpoints."""
        values = initial_values(self.tuning.space, self.rng)
        spec, session = self.plan.spec, self.session
        policy = spec.training.checkpoint
        run_id = uuid.uuid4().hex
        location = checkpoint_location(policy, run_id, session.artifacts.run_uri(run_id))
        handle = open_run(
            spec.experiment_name, session, params=_nested(values), parent=study,
            tags={"pbt": {"member": index, "exploits": []}},
            run_id=run_id, code=self.plan.code(),
            system=SystemRecord(pbt=PbtEntry(study=study.run_id, member=index)).merged(
                checkpoint_record(policy, location)),
        )
        stack.enter_context(handle)
        manager = CheckpointManager(
            location, policy, run_id, storage_options=policy.fsspec_options(),
            on_saved=lambda info: handle.record_checkpoint(info.step, info.uri, info.epoch,
                                                           info.metric_values),
            on_deleted=lambda info: handle.mark_checkpoint_deleted(info.step),
        )
        stack.callback(manager.close)
        return PbtMember(index, handle, manager, values, spec_with(spec, values, self.source))

    def _total_steps(self, dataset: Dataset) -> int:
        """Steps each member trains: `training.epochs` epochs of a member trainer's batches."""
        probe = self.members[0].build_trainer(dataset)
        return self.plan.spec.training.epochs * probe.steps_per_epoch

    def _train(self, dataset: Dataset) -> None:
        total = self._total_steps(dataset)
        interval = self.pbt.interval_steps
        previous = 0
        for number, step in enumerate(range(interval, total + interval, interval), start=1):
            step = min(step, total)
            scores = {m.index: self._train_member(m, dataset, previous, step, total)
                      for m in self.members}
            self.intervals.append(IntervalScores(number, step, scores,
                                                 {m.index: dict(m.values) for m in self.members}))
            self.listener.on_interval_end(number, step, scores, self.members)
            if step < total:
                self._exploit_all(number, step, scores)
            previous = step

    def _train_member(self, member: PbtMember, dataset: Dataset, start: int, step: int,
                      total: int) -> float:
        """One interval of one member; its objective at the end."""
        stop = StopAt(step)
        trainer = member.build_trainer(dataset, (stop,) if step < total else ())
        loaded = member.restore(trainer, start)
        self.listener.on_member_loaded(member, loaded, trainer)
        trainer.fit()
        if stop.fired:
            trainer.state.should_stop = False  # the interval's end, not the member's
        metrics = score(trainer, dataset)
        objective = self.tuning.objective.metric
        member.run.log_metrics({f"pbt_{objective}": metrics[objective]}, step)
        failure = member.save(trainer, metrics)
        if failure is not None:
            self.save_failures[(member.index, step)] = failure
        return metrics[objective]

    def _exploit_all(self, interval: int, step: int, scores: Mapping[int, float]) -> None:
        pairs = plan_exploits(scores, quantile=self.pbt.quantile,
                              direction=self.tuning.objective.direction, rng=self.rng)
        for recipient, donor in pairs:
            record = self._exploit(self.members[recipient], self.members[donor], interval, step)
            self.exploits.append(record)
            self._tag(self.members[recipient])
            self.listener.on_exploit(record)

    def _exploit(self, recipient: PbtMember, donor: PbtMember, interval: int,
                 step: int) -> ExploitRecord:
        refused = ExploitRecord(interval, step, recipient.index, donor.index, exploited=False,
                                before=dict(recipient.values), after=dict(recipient.values))
        info = donor.checkpoints.latest()
        if info is None or info.step != step:
            newest = f"its newest is of step {info.step}" if info else "it has none"
            failure = self.save_failures.get((donor.index, step))
            why = f"; saving it failed: {failure}" if failure else ""
            return replace(refused, reason=f"donor member {donor.index} has no valid checkpoint "
                           f"of step {step} ({newest}{why}); the recipient keeps its own "
                           "weights")
        with donor.checkpoints.pinned(info.step):
            try:
                expected, copied = _copy_verified(donor.checkpoints, info, recipient.checkpoints)
            except CheckpointError as exc:
                return replace(refused, reason=f"donor member {donor.index}'s checkpoint of step "
                               f"{step} cannot be copied: {exc}; the recipient keeps its own "
                               "weights")
        values = explore(donor.values, self.tuning.space, self.pbt, self.rng)
        recipient.values, recipient.expected_weights = values, expected
        recipient.spec = spec_with(self.plan.spec, values, self.source)
        recipient.run.log_params(_nested(values))
        return replace(refused, exploited=True, donor_checkpoint=info.uri,
                       donor_checkpoint_step=info.step, recipient_checkpoint=copied.uri,
                       weights_sha256=expected, after=dict(values))

    def _tag(self, member: PbtMember) -> None:
        lineage = self._lineage()
        member.run.set_tags({"pbt": {"member": member.index, "exploits": [
            {"interval": r.interval, "step": r.step, "exploited": r.exploited,
             "donor": r.donor, "donor_run": self.members[r.donor].run.run_id,
             "changes": {path: list(change) for path, change in r.changes().items()},
             **({"reason": r.reason} if r.reason else {})}
            for r in lineage.member_exploits(member.index)]}})

    def _lineage(self) -> Lineage:
        objective = self.tuning.objective
        return Lineage(objective.metric, objective.direction, self.pbt.population,
                       list(self.intervals), list(self.exploits))

    def _record(self, study: RunHandle) -> None:
        lineage = self._lineage()
        study.put_artifact(LINEAGE_ARTIFACT, lineage.to_json())
        study.put_artifact(PLOT_ARTIFACT, plot_lineage(lineage))
        final = self.intervals[-1].scores
        best = rank(final, self.tuning.objective.direction)[0]
        study.set_summary({f"best_{self.tuning.objective.metric}": final[best]})
        study.set_tags({"pbt": {"population": self.pbt.population,
                                "objective": self.tuning.objective.metric,
                                "best_member": best,
                                "best_run": self.members[best].run.run_id,
                                "exploits": sum(r.exploited for r in self.exploits),
                                "refused": sum(not r.exploited for r in self.exploits)}})
        for member in self.members:
            member.run.set_summary({f"pbt_{self.tuning.objective.metric}": final[member.index]})

    def _result(self, study_id: str) -> PbtResult:
        final = self.intervals[-1].scores
        order = rank(final, self.tuning.objective.direction)
        members = [PbtMemberResult(i, self.members[i].run.run_id, dict(self.members[i].values),
                                   final[i]) for i in order]
        return PbtResult(self.session.store.get_run(study_id), members, self._lineage())


def _copy_verified(donor: CheckpointManager, info: CheckpointInfo,
                   recipient: CheckpointManager) -> tuple[str, CheckpointInfo]:
    """Copy `info` into `recipient`; the hash of its weights, checked on the copy read back."""
    state, _ = donor.load(info)
    expected = weights_sha256(state["model"])
    del state
    copied = recipient.copy_from(donor, info)
    state, _ = recipient.load(copied)
    found = weights_sha256(state["model"])
    if found != expected:
        raise CheckpointError(f"{copied.uri}: the copy's weights hash to {found}, the donor's "
                              f"{info.uri} to {expected}")
    return expected, copied


def _nested(values: Values) -> dict[str, Any]:
    """Dotted paths as nested params: {"training.optimizer.lr": v} → training.optimizer.lr."""
    params: dict[str, Any] = {}
    for path, value in values.items():
        *parents, leaf = path.split(".")
        node = params
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return params
