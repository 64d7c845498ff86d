"""Checks across sections of a spec, run by `trainforge validate` and before every run.

Rules for the columns a spec names (data.target, data.split.time_column, each transform's
columns, features.passthrough, features.exclude and evaluation.slices):
- Each must be a known column. The known columns are the data's when `data.source` matches a
  file (the first file's Parquet footer or CSV header line is read, never its rows), else the
  contract's when there is one; with neither, columns are not checked. A data file that cannot
  be read is a problem of `data.source`.
- A transform may also name an output of an earlier one_hot transform (`<column>=<value>`),
  and passthrough one of any.
- Each problem names the field path, the column, the closest known column, and where the
  known columns came from.

`data.positive_label` applies to a binary task only, and must match one of the target's
`allowed` values when the contract lists them; so does `evaluation.threshold: auto`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trainforge.config import PipelineSpec
from trainforge.errors import DataError, DataNotFound, SpecError, TrainingError
from trainforge.evaluate import METRICS_BY_TASK
from trainforge.ingest import read_columns
from trainforge.models import resolve_builder
from trainforge.pipeline._columns import list_columns, same_label, suggest_column
from trainforge.train import logged_metric_names
from trainforge.validate import SchemaContract, load_contract


@dataclass(frozen=True)
class KnownColumns:
    """The columns a spec may name, and where they were read (`origin`, for messages)."""

    names: tuple[str, ...]
    origin: str


def gate_metric_names(task: str, slices: bool = False) -> list[str]:
    """Metrics a gate may name: evaluation metrics on the val and test splits, and val_loss;
    with `slices`, the test split's slice gaps (`test_slice_gap_<metric>`) too."""
    metrics = METRICS_BY_TASK[task]
    names = [f"{split}_{m}" for split in ("test", "val") for m in metrics]
    gaps = [f"test_slice_gap_{m}" for m in metrics] if slices else []
    return [*names, *gaps, "val_loss"]


def check_spec(spec: PipelineSpec, source: str | Path) -> None:
    """Raise SpecError listing every cross-field problem, each naming the field path; problems
    of the contract file name that file instead."""
    contract, contract_problems = _load_contract(spec)
    known, data_problems = _known_columns(spec, contract)
    stopping = spec.training.early_stopping
    problems = [*_check_target(spec), *_check_positive_label(spec, contract), *_check_gates(spec),
                *_check_threshold(spec), *_check_model(spec),
                *_check_logged_metric(spec, "training.early_stopping.metric",
                                      stopping.metric if stopping else None),
                *_check_logged_metric(spec, "training.checkpoint.monitor",
                                      spec.training.checkpoint.monitor),
                *_check_objective(spec), *_check_promotion_metrics(spec),
                *data_problems, *_check_columns(spec, known)]
    if problems or contract_problems:
        raise SpecError([*(f"{source}: {problem}" for problem in problems), *contract_problems])


def _check_columns(spec: PipelineSpec, known: KnownColumns | None) -> list[str]:
    """One problem per column the spec names that is not in `known` (None: nothing to check)."""
    if known is None:
        return []
    names = set(known.names)
    encoded: list[str] = []
    problems = []
    for field, column, one_hot in _named_columns(spec):
        made = any(column.startswith(f"{source}=") for source in encoded)
        if column not in names and not made:
            problems.append(
                f"{field}: {column!r} is not a column of {known.origin}"
                f"{suggest_column(column, known.names)}; its columns are: "
                f"{list_columns(known.names)}"
            )
        if one_hot:
            encoded.append(column)
    return problems


def _named_columns(spec: PipelineSpec) -> Iterator[tuple[str, str, bool]]:
    """(field path, column, feeds a one_hot transform) of each column the spec names, in the
    order the pipeline uses them."""
    data, features = spec.data, spec.features
    yield "data.target", data.target, False
    if data.split.time_column:
        yield "data.split.time_column", data.split.time_column, False
    for i, transform in enumerate(features.transforms):
        for column in transform.columns:
            yield f"features.transforms.{i}.columns", column, transform.type == "one_hot"
    for field, columns in (("passthrough", features.passthrough),
                           ("exclude", features.exclude)):
        for column in columns:
            yield f"features.{field}", column, False
    for column in spec.evaluation.slices:
        yield "evaluation.slices", column, False


def _load_contract(spec: PipelineSpec) -> tuple[SchemaContract | None, list[str]]:
    if spec.data.contract is None:
        return None, []
    try:
        return load_contract(spec.data.contract), []
    except SpecError as exc:
        return None, exc.problems


def _known_columns(
    spec: PipelineSpec, contract: SchemaContract | None
) -> tuple[KnownColumns | None, list[str]]:
    """The data's columns when its source matches a file, else the contract's (or None); and
    the problem of a data file that cannot be read."""
    try:
        path, names = read_columns(spec.data.source, spec.data.format,
                                   spec.data.fsspec_options())
    except DataNotFound:
        if contract is None:
            return None, []
        return KnownColumns(tuple(contract.columns), f"contract {spec.data.contract}"), []
    except DataError as exc:
        return None, [f"data.source: {exc}"]
    return KnownColumns(tuple(names), f"data file {path}"), []


def _check_target(spec: PipelineSpec) -> list[str]:
    target = spec.data.target
    problems = []
    for i, transform in enumerate(spec.features.transforms):
        if target in transform.columns:
            problems.append(f"features.transforms.{i}.columns: must not use the target {target!r}")
    if target in spec.features.passthrough:
        problems.append(f"features.passthrough: must not use the target {target!r}")
    return problems


def _check_positive_label(spec: PipelineSpec, contract: SchemaContract | None) -> list[str]:
    """A positive label is for a binary task, and one of the target's allowed values when the
    contract lists them."""
    label, target = spec.data.positive_label, spec.data.target
    if label is None:
        return []
    if spec.model.task != "binary":
        return [f"data.positive_label: applies to a binary task only; model.task is "
                f"{spec.model.task!r}"]
    rule = contract.columns.get(target) if contract else None
    if rule is None or rule.allowed is None or any(same_label(v, label) for v in rule.allowed):
        return []
    return [f"data.positive_label: {label!r} is none of the values contract "
            f"{spec.data.contract} allows for the target {target!r}: "
            f"{', '.join(map(repr, rule.allowed))}"]


def _check_threshold(spec: PipelineSpec) -> list[str]:
    if spec.evaluation.threshold == "auto" and spec.model.task != "binary":
        return [f"evaluation.threshold: auto applies to a binary task only; model.task is "
                f"{spec.model.task!r}"]
    return []


def _check_gates(spec: PipelineSpec) -> list[str]:
    known = gate_metric_names(spec.model.task, bool(spec.evaluation.slices))
    return [problem for i, gate in enumerate(spec.evaluation.gates)
            for problem in _named_metric(f"evaluation.gates.{i}.metric", gate.metric, known)]


def _check_objective(spec: PipelineSpec) -> list[str]:
    """A study's objective is a metric its trials record: one the trainer logs, or a test
    metric of the task (a population-based study's own checks ask for a validation one)."""
    tuning = spec.tuning
    if tuning is None or tuning.pbt is not None:
        return []
    known = list(dict.fromkeys([*logged_metric_names(spec.model.task),
                                *gate_metric_names(spec.model.task,
                                                   bool(spec.evaluation.slices))]))
    return _named_metric("tuning.objective.metric", tuning.objective.metric, known)


def _check_promotion_metrics(spec: PipelineSpec) -> list[str]:
    """`registry.promotion.max_drop` names a recorded test metric, `max_slice_gap` an
    evaluation metric of the task."""
    if spec.registry is None:
        return []
    promotion, task = spec.registry.promotion, spec.model.task
    tested = [name for name in gate_metric_names(task) if name.startswith("test_")]
    return [
        *(problem for i, limit in enumerate(promotion.max_drop) for problem in _named_metric(
            f"registry.promotion.max_drop.{i}.metric", limit.metric, tested)),
        *(problem for i, limit in enumerate(promotion.max_slice_gap) for problem in
          _named_metric(f"registry.promotion.max_slice_gap.{i}.metric", limit.metric,
                        list(METRICS_BY_TASK[task]))),
    ]


def _named_metric(field: str, metric: str, known: list[str]) -> list[str]:
    """`field` names `metric`, which must be one of `known` (with a did-you-mean)."""
    if metric in known:
        return []
    hint = difflib.get_close_matches(metric, known, n=1)
    suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
    return [f"{field}: expected one of {', '.join(known)}, got {metric!r}{suggestion}"]


def _check_logged_metric(spec: PipelineSpec, field: str, metric: str | None) -> list[str]:
    """`field` names `metric`, which must be one the trainer logs (None: not set)."""
    if metric is None:
        return []
    return _named_metric(field, metric, logged_metric_names(spec.model.task))


def _check_model(spec: PipelineSpec) -> list[str]:
    try:
        resolve_builder(spec.model.type)
    except TrainingError as exc:
        return [str(exc)]
    return []
