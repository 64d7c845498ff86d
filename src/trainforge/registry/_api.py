"""The registry's operations: promote a version (gates measured, the move committed under the
model's lock, the change announced), name versions (aliases, stages) and resolve what a user
types (`3`, `production`, `champion`).

A promotion:
1. resolves the version and checks the move is allowed (`_stages`); `--force` needs a reason
   (a rollback takes the version that held production before the current one, archived by
   that promotion, straight back: `rollback`);
2. measures the gates the candidate's spec declares for the target stage (`_gating`), the
   production version re-scored on the candidate's test split;
3. failed gates without `force`: a `refused` history entry with the report, then
   `GatesFailed`; otherwise the store moves the version (and archives the stage's holder) in
   one transaction, checking that nothing changed since step 2 (else `Conflict`, nothing
   written: of two concurrent promotions one wins);
4. the store writes the event of each history entry (promoted, replaced, refused) to the
   outbox in the transaction that adds the entry; a deliverer sends them to webhooks later
   (`trainforge.events.Deliverer`), so a promotion never waits for a receiver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from trainforge.entities import ModelStage, ModelVersion, StageChange, StageOutcome
from trainforge.errors import GatesFailed, NotFound, PromotionError
from trainforge.registry._gating import measure_gates
from trainforge.registry._stages import SINGLE_HOLDER_STAGES, check_move
from trainforge.storage import all_items
from trainforge.storage.contracts import RegistryStore, RunStore

if TYPE_CHECKING:
    from trainforge.storage.artifacts import ArtifactStore

_ALIAS = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


class PromotionStore(RegistryStore, RunStore, Protocol):
    """What a promotion reads and writes: model versions and the runs that made them."""


@dataclass(frozen=True)
class Promotion:
    """A committed promotion: its history entry (gate report included) and the version it
    moved out of the stage (None when the stage was empty)."""

    change: StageChange
    replaced: str | None

    @property
    def gate_report(self) -> list[dict[str, Any]]:
        return list(self.change.gate_report)


def promote(
    store: PromotionStore, artifacts: ArtifactStore, model_name: str, version: str,
    to: ModelStage | str, *, reason: str = "", force: bool = False, user: str = "",
) -> Promotion:
    """Move version `version` of `model_name` to stage `to` if its gates pass (or `force`,
    with a `reason`); see the module docstring. `PromotionError` for a move not allowed,
    `GatesFailed` (recorded) for failed gates, `Conflict` when another change came first."""
    target = ModelStage(to)
    candidate = resolve_version(store, model_name, version)
    check_move(model_name, candidate.version, candidate.stage, target)
    return _move(store, artifacts, candidate, target, reason=reason, force=force, user=user)


def rollback(
    store: PromotionStore, artifacts: ArtifactStore, model_name: str, *, reason: str = "",
    force: bool = False, user: str = "",
) -> Promotion:
    """Put back in production the version that held it before the current one (archived by
    its promotion), in one move: its gates for production measured again against the current
    holder (refused and recorded unless they pass or `force`), the reason recorded as a
    rollback. `PromotionError` when nothing is in production, no other version held it, or
    that version has left `archived` since (promote it instead)."""
    current = store.get_stage_holder(model_name, ModelStage.PRODUCTION)
    if current is None:
        raise PromotionError(f"model {model_name!r} has no version in production to roll "
                             "back from")
    previous = previous_holder(store, model_name, current.version)
    if previous is None:
        raise PromotionError(f"model {model_name!r}: no version held production before "
                             f"version {current.version}; nothing to roll back to")
    candidate = store.get_model_version(model_name, previous)
    if candidate.stage is not ModelStage.ARCHIVED:
        raise PromotionError(f"model {model_name!r} version {previous} held production before "
                             f"version {current.version} and is in {candidate.stage.value} "
                             "now; promote it instead")
    why = f"rollback from version {current.version}" + (f": {reason}" if reason.strip() else "")
    return _move(store, artifacts, candidate, ModelStage.PRODUCTION, reason=why, force=force,
                 user=user)


def previous_holder(store: RegistryStore, model_name: str, current: str) -> str | None:
    """The version promoted to production last before `current` was, other than it."""
    changes = all_items(lambda cursor: store.list_stage_changes(model_name, cursor=cursor))
    promoted = [change.version for change in changes
                if change.to_stage is ModelStage.PRODUCTION
                and change.outcome is StageOutcome.PROMOTED]
    return next((version for version in reversed(promoted) if version != current), None)


def _move(store: PromotionStore, artifacts: ArtifactStore, candidate: ModelVersion,
          target: ModelStage, *, reason: str, force: bool, user: str) -> Promotion:
    """The gates of `candidate` for `target` measured, then the move committed (see the
    module docstring, steps 2 to 4)."""
    model_name = candidate.model_name
    if force and not reason.strip():
        raise PromotionError("--force overrides failed gates and needs a reason (--reason)")
    holder = store.get_stage_holder(model_name, target) if target in SINGLE_HOLDER_STAGES \
        else None
    production = store.get_stage_holder(model_name, ModelStage.PRODUCTION)
    outcomes = measure_gates(store, artifacts, candidate, target, production)
    report = [outcome.to_dict() for outcome in outcomes]
    failed = [outcome for outcome in outcomes if not outcome.passed]
    if failed and not force:
        store.record_refusal(model_name, candidate.version, target, user=user, reason=reason,
                             gate_report=report)
        lines = "\n".join(f"  {outcome.gate}: {outcome.message}" for outcome in failed)
        raise GatesFailed(
            f"model {model_name!r} version {candidate.version}: promotion to {target.value} "
            f"refused by {len(failed)} gate(s) (recorded in its history):\n{lines}\n"
            "override with --force --reason '...'", report)
    change = store.change_stage(
        model_name, candidate.version, target, expected_from=candidate.stage,
        expected_holder=None if holder is None else holder.version, user=user, reason=reason,
        forced=bool(failed), gate_report=report)
    return Promotion(change, None if holder is None else holder.version)


def resolve_version(store: RegistryStore, model_name: str, ref: str) -> ModelVersion:
    """The version `ref` names: a number (`3`), a stage held by one version (`production`,
    `canary`), a label (`3.1`, given at registration) or an alias; `NotFound` saying which
    when none."""
    if ref.isdigit():
        return store.get_model_version(model_name, ref)
    if ref in (stage.value for stage in SINGLE_HOLDER_STAGES):
        found = store.get_stage_holder(model_name, ModelStage(ref))
        if found is None:
            raise NotFound(f"model {model_name!r} has no version in {ref}")
        return found
    try:
        return store.get_model_version_by_label(model_name, ref)
    except NotFound:
        return store.get_alias(model_name, ref)


def parse_reference(text: str) -> tuple[str, str | None]:
    """`NAME@REF` as (NAME, REF); a plain `NAME` as (NAME, None)."""
    name, _, ref = text.partition("@")
    return name, ref or None


def set_alias(store: RegistryStore, model_name: str, alias: str, version: str) -> ModelVersion:
    """Point `alias` at a version (moving it); `ValueError` for an alias that is not a name
    (a letter, then letters, digits, `_.-`), is a stage's name or is a version's label (which
    would name that version first)."""
    if not _ALIAS.fullmatch(alias) or alias in {stage.value for stage in ModelStage}:
        raise ValueError(f"alias {alias!r}: expected a name starting with a letter (letters, "
                         "digits, _ . -), not a stage's name")
    try:
        labelled = store.get_model_version_by_label(model_name, alias)
    except NotFound:
        labelled = None
    if labelled is not None:
        raise ValueError(f"alias {alias!r}: it is the label of {model_name} version "
                         f"{labelled.version}, which it names already")
    target = resolve_version(store, model_name, version)
    store.set_alias(model_name, alias, target.version)
    return target

