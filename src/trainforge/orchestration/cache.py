"""The step cache: a step's key from what it depends on (`fingerprint.py`), the decision to
reuse stored outputs or run, and `explain`, which says why a step hit or missed.

A decision is recorded with the attempt (`cache_parts["decision"]`, outside the hashed parts):

    hit       the outputs of the newest succeeded execution with the same key were reused
    new       no earlier execution had this key (what changed: `explain` compares parts)
    no-cache  the run was started with --no-cache
    rerun     the step was named by --rerun
    disabled  the step says `cache: false`
    expired   the execution with this key ended longer ago than the step's TTL
    gone      its stored outputs are no longer in the value store
    uncached  the step has no key (an input held in memory, params that are not plain values,
              data it reads that could not be fingerprinted: the attempt says why)
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from trainforge.entities import StepRun, StepState
from trainforge.errors import TrainforgeError
from trainforge.orchestration.dag import Step
from trainforge.orchestration.fingerprint import (
    CacheKey,
    Fingerprinter,
    KeyParts,
    data_hashes,
    digest_of,
    plain_params,
)
from trainforge.orchestration.values import ValueRef, ValueStore
from trainforge.storage.contracts import PipelineRunStore


def step_key(step: Step, inputs: Mapping[str, ValueRef | None],
             fingerprints: Fingerprinter) -> CacheKey:
    """The cache key of `step` given its inputs' references (None: held in memory)."""
    code, deps = fingerprints.code(step.fn)
    parts = KeyParts(code=code, deps=deps, outputs=list(step.outputs))
    memory = [name for name, ref in inputs.items() if ref is None]
    if memory:
        return CacheKey(None, parts.to_json(),
                        f"input {memory[0]!r} is held in memory (no codec stores it)")
    parts.inputs = {name: ref.digest for name, ref in inputs.items() if ref is not None}
    try:
        parts.params = {**plain_params(step.params), **plain_params(step.key_params)}
        parts.data = data_hashes(step.params, step.options.data)
        if step.key_data is not None:
            parts.data.update(step.key_data())
    except (TypeError, OSError, TrainforgeError) as exc:
        return CacheKey(None, parts.to_json(), str(exc))
    return CacheKey(digest_of(parts.to_json()), parts.to_json())


def lookup(store: PipelineRunStore, values: ValueStore, step: Step, key: CacheKey,
           refusal: str | None) -> tuple[str, StepRun | None]:
    """(decision, the execution to reuse on a hit). `refusal` is the run's reason not to look
    (`no-cache`, `rerun`), if any."""
    if key.digest is None:
        return "uncached", None
    if refusal is not None:
        return refusal, None
    if not step.options.cache:
        return "disabled", None
    found = store.find_cached(key.digest)
    if found is None:
        return "new", None
    ttl = step.options.cache_ttl_s
    if ttl is not None and (found.ended_at is None or found.ended_at
                            < datetime.now(timezone.utc) - timedelta(seconds=ttl)):
        return "expired", None
    refs = stored_refs(found.outputs)
    if refs is None or values.missing(list(refs.values())):
        return "gone", None
    return "hit", found


def stored_refs(outputs: Mapping[str, Any]) -> dict[str, ValueRef] | None:
    """The references a step run recorded, or None when an output was held in memory."""
    if any(not isinstance(ref, dict) or "digest" not in ref for ref in outputs.values()):
        return None
    return {name: ValueRef.from_json(ref) for name, ref in outputs.items()}


def explain(store: PipelineRunStore, pipeline_id: str, attempt: StepRun) -> list[str]:
    """Why `attempt` hit or missed, one line per reason: a hit names the execution it reused; a
    miss names what differs from the previous execution of the step in this pipeline (a
    changed file or function, param, data, input, dependency version) or the run's option
    that made it run."""
    decision = attempt.cache_parts.get("decision")
    key = (attempt.cache_key or "")[:12]
    if attempt.state is StepState.CACHED:
        return [f"hit: key {key} matches step run {attempt.cached_from}, whose stored outputs "
                "were reused"]
    if attempt.cache_key is None:
        reason = attempt.cache_parts.get("reason") or "it has no key"
        return [f"not cached: {reason}"]
    fixed = {
        "no-cache": "miss: the run was started with --no-cache",
        "rerun": "miss: the step was named by --rerun",
        "disabled": "miss: the step says cache: false",
        "expired": "miss: the execution with this key is older than the step's TTL",
        "gone": "miss: the stored outputs of the execution with this key are gone",
    }
    if decision in fixed:
        return [fixed[decision]]
    previous = store.previous_step_run(pipeline_id, attempt.step, attempt.step_run_id)
    if previous is None:
        return [f"miss: no earlier execution of step {attempt.step!r} in this pipeline"]
    changes = differences(previous.cache_parts, attempt.cache_parts)
    if not changes:
        return [f"miss: key {key} has the same parts as step run {previous.step_run_id}, whose "
                "outputs were not kept"]
    return [f"miss: {change}" for change in changes]


def differences(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between two attempts' key parts, in words."""
    lines: list[str] = []
    lines += _compared(before.get("code", {}), now.get("code", {}), "{} changed", "{} is new",
                       "{} is no longer called")
    lines += _compared(before.get("params", {}), now.get("params", {}),
                       "param {}: {old!r} -> {new!r}", "param {} added: {new!r}",
                       "param {} removed")
    lines += _compared(before.get("data", {}), now.get("data", {}), "data of param {} changed",
                       "data of param {} added", "data of param {} removed")
    lines += _compared(before.get("inputs", {}), now.get("inputs", {}),
                       "input {} changed (its upstream output differs)", "input {} added",
                       "input {} removed")
    lines += _compared(before.get("deps", {}), now.get("deps", {}),
                       "dependency {}: {old} -> {new}", "dependency {} added ({new})",
                       "dependency {} removed")
    if before.get("outputs") != now.get("outputs"):
        lines.append(f"outputs: {before.get('outputs')} -> {now.get('outputs')}")
    return lines


def _compared(before: Mapping[str, Any], now: Mapping[str, Any], changed: str, added: str,
              removed: str) -> list[str]:
    lines = []
    for name in sorted(set(before) | set(now)):
        if name not in before:
            lines.append(added.format(name, new=now[name]))
        elif name not in now:
            lines.append(removed.format(name))
        elif before[name] != now[name]:
            lines.append(changed.format(name, old=before[name], new=now[name]))
    return lines
