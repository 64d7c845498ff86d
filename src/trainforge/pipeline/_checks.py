"""Checks across sections of a spec, run by `trainforge validate` and before every run."""

from __future__ import annotations

import difflib
from pathlib import Path

from trainforge.config import PipelineSpec
from trainforge.errors import SpecError, TrainingError
from trainforge.evaluate import METRICS_BY_TASK
from trainforge.models import resolve_builder
from trainforge.train import logged_metric_names
from trainforge.validate import load_contract


def gate_metric_names(task: str) -> list[str]:
    """Metrics a gate may name: evaluation metrics on the val and test splits, and val_loss."""
    names = [f"{split}_{m}" for split in ("test", "val") for m in METRICS_BY_TASK[task]]
    return [*names, "val_loss"]


def check_spec(spec: PipelineSpec, source: str | Path) -> None:
    """Raise SpecError listing every cross-field problem, each naming the field path."""
    stopping = spec.training.early_stopping
    problems = [*_check_target(spec), *_check_gates(spec), *_check_model(spec),
                *_check_logged_metric(spec, "training.early_stopping.metric",
                                      stopping.metric if stopping else None),
                *_check_logged_metric(spec, "training.checkpoint.monitor",
                                      spec.training.checkpoint.monitor)]
    if problems:
        raise SpecError([f"{source}: {problem}" for problem in problems])
    if spec.data.contract:
        load_contract(spec.data.contract)


def _check_target(spec: PipelineSpec) -> list[str]:
    target = spec.data.target
    problems = []
    for i, transform in enumerate(spec.features.transforms):
        if target in transform.columns:
            problems.append(f"features.transforms.{i}.columns: must not use the target {target!r}")
    if target in spec.features.passthrough:
        problems.append(f"features.passthrough: must not use the target {target!r}")
    return problems


def _check_gates(spec: PipelineSpec) -> list[str]:
    known = gate_metric_names(spec.model.task)
    problems = []
    for i, gate in enumerate(spec.evaluation.gates):
        if gate.metric not in known:
            hint = difflib.get_close_matches(gate.metric, known, n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            problems.append(
                f"evaluation.gates.{i}.metric: expected one of {', '.join(known)}, "
                f"got {gate.metric!r}{suggestion}"
            )
    return problems


def _check_logged_metric(spec: PipelineSpec, field: str, metric: str | None) -> list[str]:
    """`field` names `metric`, which must be one the trainer logs (None: not set)."""
    known = logged_metric_names(spec.model.task)
    if metric is None or metric in known:
        return []
    hint = difflib.get_close_matches(metric, known, n=1)
    suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
    return [f"{field}: expected one of {', '.join(known)}, got {metric!r}{suggestion}"]


def _check_model(spec: PipelineSpec) -> list[str]:
    try:
        resolve_builder(spec.model.type)
    except TrainingError as exc:
        return [str(exc)]
    return []
