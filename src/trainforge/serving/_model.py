"""One served model version: its checks, its feature encoder and its scorer, loaded once and
then only read (one instance serves every request thread).

The scorer is onnxruntime over `export/model.onnx` when the version's run has an accepted
`onnx-fp32` export, else the torch module (or as the caller asks). The contract comes from the
export bundle, or is derived as export would derive it. The ranges and categories a record is
flagged against come from the training data's stored profile when the caller gives it
(`served_profile`: the data version's values between the quantiles asked for, by default its
exact minimum and maximum, so no training row is ever flagged), else from the export bundle's
profile (the feature pipeline's fitted state and the golden set). Loading checks that
the served encoder reproduces the training features on the golden set (`FeatureMismatch`
otherwise). Binary labels use the threshold of `evaluation/report.json`, 0.5 without one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from trainforge.entities import ModelVersion, Run
from trainforge.errors import ExportError
from trainforge.features import ServedEncoder, check_served_features, compile_encoder
from trainforge.serving._checks import RecordChecker
from trainforge.storage.artifacts import ArtifactStore
from trainforge.tracking import system_of

if TYPE_CHECKING:
    from trainforge.profiles import ColumnProfile, DatasetProfile

DEFAULT_THRESHOLD = 0.5
RUNTIMES = ("auto", "onnxruntime", "torch")
Scorer = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class ServedVersion:
    """A model version ready to answer: check, encode, score, label."""

    version: ModelVersion
    runtime: str
    task: str
    classes: tuple[Any, ...]
    threshold: float
    checker: RecordChecker
    encoder: ServedEncoder
    scorer: Scorer
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.version.version

    def predict(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One answer per record (records already passed `checker.problems`)."""
        scores = self.scorer(self.encoder.encode(records))
        flags = self.checker.flags(records)
        return [{**answer, "flags": found}
                for answer, found in zip(self.answers(scores), flags, strict=True)]

    def answers(self, scores: np.ndarray) -> list[dict[str, Any]]:
        """Scores as predictions: binary probability and label by the threshold, multiclass
        class and probabilities, regression value."""
        if self.task == "binary":
            labels = self.classes or (0, 1)
            return [{"prediction": labels[int(p >= self.threshold)], "probability": p}
                    for p in scores.tolist()]
        if self.task == "multiclass":
            names = [str(c) for c in self.classes]
            return [{"prediction": self.classes[int(np.argmax(row))],
                     "probabilities": dict(zip(names, row, strict=True))}
                    for row in scores.tolist()]
        return [{"prediction": value} for value in scores.tolist()]


def load_served_version(artifacts: ArtifactStore, version: ModelVersion, run: Run,
                        *, runtime: str = "auto", threads: int = 1,
                        data_profile: DatasetProfile | None = None,
                        range_quantiles: tuple[float, float] = (0.0, 1.0)) -> ServedVersion:
    """Load `version` (of run `run`) for serving; ArtifactError names what is missing.

    `runtime`: "auto" (onnxruntime when the run has an accepted onnx-fp32 export, else torch),
    "onnxruntime" (ExportError without one) or "torch"; `threads`: onnxruntime's intra-op
    threads; `data_profile`: the stored profile of the data version it trained on, whose
    values between `range_quantiles` are the served ranges (`served_profile`)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
    from trainforge.export import (
        read_contract,
        read_export_report,
        read_golden_set,
        served_contract,
        training_profile,
    )
    from trainforge.train import load_stored_model

    stored = load_stored_model(artifacts, run.run_id)
    golden = read_golden_set(artifacts, run.run_id)
    check_served_features(stored.features, golden, run.run_id)
    encoder = compile_encoder(stored.features)
    report = read_export_report(artifacts, run.run_id)
    onnx = report.accepted("onnx-fp32") if report is not None else None
    if runtime == "onnxruntime" and onnx is None:
        raise ExportError(f"model {version.model_name} version {version.version}: run "
                          f"{run.run_id} has no accepted onnx-fp32 export (trainforge export "
                          f"{version.model_name} {version.version})")
    if runtime == "torch":
        onnx = None
    if report is not None:
        contract = read_contract(artifacts.get_bytes(run.run_id, "export/contract.yaml"))
        profile = json.loads(artifacts.get_bytes(run.run_id, "export/profile.json"))
    else:
        recorded = system_of(run).data
        contract = served_contract(stored.features, golden,
                                   recorded.contract if recorded is not None else None)
        profile = training_profile(stored.features, golden)
    if data_profile is not None:
        profile = served_profile(data_profile, profile, encoder.numeric, range_quantiles)
    if onnx is not None:
        scorer = _onnx_scorer(artifacts.get_bytes(run.run_id, onnx.artifact), threads)
        runtime = "onnxruntime"
    else:
        scorer = _torch_scorer(stored.module, stored.task)
        runtime = "torch"
    checker = RecordChecker.build(contract, list(encoder.inputs), profile, encoder.limits)
    threshold = _threshold(artifacts, run.run_id)
    metadata = {
        "model": version.model_name, "version": version.version, "stage": version.stage.value,
        "run_id": version.run_id, "data_version_id": version.data_version_id,
        "git_commit": version.git_commit, "created_at": version.created_at.isoformat(),
        "metrics": version.metrics, "runtime": runtime, "task": stored.task,
        "threshold": threshold if stored.task == "binary" else None,
        "features_hash": stored.features.content_hash, "inputs": list(encoder.inputs),
        "export": report.to_dict() if report is not None else None,
    }
    return ServedVersion(version, runtime, stored.task, stored.classes, threshold, checker,
                         encoder, scorer, metadata)


def served_profile(data: DatasetProfile, bundled: dict[str, Any], numeric: Collection[str],
                   quantiles: tuple[float, float]) -> dict[str, Any]:
    """The ranges and categories records are flagged against, from the training data's
    profile: each numeric input's values from quantile `low` to `high` (0 and 1: its exact
    minimum and maximum), each categorical input's categories the model learned (`bundled`)
    and every value the data holds. A column the profile lacks keeps the bundle's entry."""
    low, high = quantiles
    if not 0.0 <= low < high <= 1.0:
        raise ValueError(f"range quantiles must satisfy 0 <= low < high <= 1, got {quantiles}")
    columns = dict(bundled.get("columns", {}))
    for name, entry in list(columns.items()):
        column = data.columns.get(name)
        if column is None or not column.values:
            continue
        if name in numeric and column.kind == "numeric":
            columns[name] = {"min": _quantile(column, low), "max": _quantile(column, high)}
        elif "categories" in entry:
            seen = [value for value, _ in column.top(len(entry["categories"]) + 1024)]
            columns[name] = {"categories": list(dict.fromkeys([*entry["categories"], *seen]))}
    return {"source": f"training data profile (quantiles {low:g} to {high:g})",
            "columns": columns}


def _quantile(column: ColumnProfile, level: float) -> float:
    if level == 0.0 and column.min is not None:
        return float(column.min)
    if level == 1.0 and column.max is not None:
        return float(column.max)
    return float(column.quantiles.get_quantile(level))


def _threshold(artifacts: ArtifactStore, run_id: str) -> float:
    if "evaluation/report.json" not in artifacts.list_names(run_id):
        return DEFAULT_THRESHOLD
    threshold = json.loads(artifacts.get_bytes(run_id, "evaluation/report.json")).get("threshold")
    return DEFAULT_THRESHOLD if threshold is None else float(threshold)


def _onnx_scorer(model: bytes, threads: int) -> Scorer:
    import onnxruntime as ort

    from trainforge.export import INPUT_NAME

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return lambda features: np.asarray(session.run(None, {INPUT_NAME: features})[0])


def _torch_scorer(module: Any, task: str) -> Scorer:
    import torch

    from trainforge.evaluate import outputs_to_scores

    def score(features: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return outputs_to_scores(module(torch.from_numpy(features)), task)

    return score
