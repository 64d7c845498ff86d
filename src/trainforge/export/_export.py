"""`export_model`: a run's model written as ONNX (fp32, optionally int8) and, when asked,
TorchScript, each checked on the run's golden set, and the serving bundle stored under the
run's `export/` artifacts.

Steps: load the stored model and the golden set (`evaluation/test.parquet`), transform it with
the stored feature pipeline, score it with the torch model (the reference), write each variant,
score the golden set with it (onnxruntime, or TorchScript), time it on a batch, judge it
(`judge_variant`), then store the files, the bundle (features.json, contract.yaml,
profile.json) and `export/report.json` last: a report names a complete bundle.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from trainforge.entities import Run
from trainforge.errors import ArtifactError, ExportError
from trainforge.evaluate import predict_scores
from trainforge.export._bundle import (
    contract_yaml,
    read_golden_set,
    served_contract,
    training_profile,
)
from trainforge.export._formats import (
    INPUT_NAME,
    ScoreHead,
    export_onnx,
    export_torchscript,
    load_torchscript,
    quantize_int8,
)
from trainforge.export._report import REPORT_ARTIFACT, ExportReport, VariantReport, judge_variant
from trainforge.storage.artifacts import ArtifactStore
from trainforge.tracking import system_of
from trainforge.train import StoredModel, load_stored_model

LATENCY_BATCH = 256
LATENCY_REPEATS = 30
Scorer = Callable[[np.ndarray], np.ndarray]


def export_model(
    artifacts: ArtifactStore,
    run: Run,
    *,
    int8: bool = False,
    torchscript: bool = False,
    parity_tolerance: float = 1e-5,
    metric_budget: float = 0.01,
) -> ExportReport:
    """Export run `run`'s model and store the bundle; the report says which variants were
    accepted and why the others were not. ArtifactError when the run lacks its model or
    golden set; ExportError when ONNX cannot be written by either exporter."""
    stored = load_stored_model(artifacts, run.run_id)
    golden = read_golden_set(artifacts, run.run_id)
    features = stored.transform(golden)
    recorded = system_of(run).data
    targets = _targets(stored, golden, recorded.target if recorded is not None else None)
    metric, score_metric = _task_metric(stored.task)
    reference = predict_scores(stored.module, features, stored.task)
    reference_metric = score_metric(reference, targets)
    head = ScoreHead(stored.module, stored.task).eval()
    example = torch.from_numpy(features[:2])
    batch = features[:LATENCY_BATCH]
    variants: list[VariantReport] = []
    files: dict[str, Path] = {}
    with tempfile.TemporaryDirectory() as tmp:

        def judge(name: str, path: Path, exporter: str, scorer: Scorer, int8_: bool,
                  base: tuple[float, int] | None) -> VariantReport:
            scores = scorer(features)
            drop = (reference_metric - score_metric(scores, targets)) if int8_ else None
            report = _judged(name, f"export/{path.name}", exporter, scores, reference, drop,
                             _latency(scorer, batch), path.stat().st_size, base,
                             parity_tolerance, metric_budget)
            files[report.artifact] = path
            variants.append(report)
            return report

        onnx_path = Path(tmp) / "model.onnx"
        try:
            exporter = export_onnx(head, example, onnx_path)
        except Exception as exc:
            raise ExportError(f"run {run.run_id}: ONNX export failed with both exporters: "
                              f"{exc}") from exc
        fp32 = judge("onnx-fp32", onnx_path, exporter, _onnx_scorer(onnx_path), False, None)
        if int8:
            int8_path = Path(tmp) / "model.int8.onnx"
            quantize_int8(onnx_path, int8_path)
            judge("onnx-int8", int8_path, "onnxruntime.quantize_dynamic",
                  _onnx_scorer(int8_path), True, (fp32.latency_ms_p50, fp32.size_bytes))
        if torchscript:
            ts_path = Path(tmp) / "model.torchscript.pt"
            export_torchscript(head, example, ts_path)
            module = load_torchscript(ts_path)
            judge("torchscript", ts_path, "torch.jit.trace",
                  lambda x: _torch_scores(module, x), False, None)
        report = ExportReport(tuple(variants), len(features), metric)
        _store_bundle(artifacts, run, stored, golden, files, report)
    return report


def _judged(name: str, artifact: str, exporter: str, scores: np.ndarray,
            reference: np.ndarray, drop: float | None, latency: float, size: int,
            base: tuple[float, int] | None, tolerance: float, budget: float) -> VariantReport:
    diff = float(np.max(np.abs(scores.astype(np.float64) - reference))) if len(scores) else 0.0
    reason = judge_variant(max_abs_diff=diff, metric_drop=drop, latency_ms=latency,
                           size_bytes=size, baseline=base, parity_tolerance=tolerance,
                           metric_budget=budget)
    return VariantReport(name=name, artifact=artifact, accepted=reason is None, reason=reason,
                         max_abs_diff=diff, metric_drop=drop, latency_ms_p50=latency,
                         size_bytes=size, exporter=exporter)


def _store_bundle(artifacts: ArtifactStore, run: Run, stored: StoredModel,
                  golden: pd.DataFrame, files: dict[str, Path], report: ExportReport) -> None:
    import json

    recorded = system_of(run).data
    contract = served_contract(stored.features, golden,
                               recorded.contract if recorded is not None else None)
    profile = training_profile(stored.features, golden)
    for artifact, path in files.items():
        artifacts.put_file(run.run_id, path, artifact)
    artifacts.put_bytes(run.run_id, "export/features.json", stored.features.to_json().encode())
    artifacts.put_bytes(run.run_id, "export/contract.yaml", contract_yaml(contract))
    artifacts.put_bytes(run.run_id, "export/profile.json",
                        json.dumps(profile, indent=2, default=str).encode())
    artifacts.put_bytes(run.run_id, REPORT_ARTIFACT,
                        json.dumps(report.to_dict(), indent=2).encode())


def _targets(stored: StoredModel, golden: pd.DataFrame, target: str | None) -> np.ndarray:
    if target is None or target not in golden.columns:
        raise ArtifactError(f"run {stored.run_id}: the golden set has no target column "
                            f"{target!r}")
    values = golden[target]
    if stored.task == "regression":
        return values.to_numpy(dtype=np.float64)
    if stored.task == "binary":
        if stored.classes:
            return (values.to_numpy(dtype=object) == stored.classes[1]).astype(np.int64)
        return values.to_numpy(dtype=np.int64)
    index = {label: i for i, label in enumerate(stored.classes)}
    return np.array([index.get(v, -1) for v in values.tolist()], dtype=np.int64)


def _task_metric(task: str) -> tuple[str, Callable[[np.ndarray, np.ndarray], float]]:
    """The metric an int8 variant's drop is measured in (higher is better; for regression
    the negated relative RMSE, so a drop is the relative increase)."""
    from torchmetrics.functional import mean_squared_error
    from torchmetrics.functional.classification import binary_auroc, multiclass_accuracy

    def auroc(scores: np.ndarray, targets: np.ndarray) -> float:
        return float(binary_auroc(torch.tensor(scores), torch.tensor(targets)))

    def accuracy(scores: np.ndarray, targets: np.ndarray) -> float:
        known = targets >= 0
        return float(multiclass_accuracy(torch.tensor(scores[known]),
                                         torch.tensor(targets[known]),
                                         num_classes=scores.shape[1], average="micro"))

    def neg_rmse(scores: np.ndarray, targets: np.ndarray) -> float:
        rmse = float(mean_squared_error(torch.tensor(scores, dtype=torch.float64),
                                        torch.tensor(targets), squared=False))
        scale = float(np.sqrt(np.mean(targets**2))) or 1.0
        return -rmse / scale

    if task == "binary":
        return "roc_auc", auroc
    if task == "multiclass":
        return "accuracy", accuracy
    return "relative_rmse", neg_rmse


def _torch_scores(module: Any, features: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return np.asarray(module(torch.from_numpy(features)).numpy())


def _onnx_scorer(path: Path) -> Scorer:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return lambda features: np.asarray(session.run(None, {INPUT_NAME: features})[0])


def _latency(scorer: Scorer, batch: np.ndarray) -> float:
    """Median milliseconds to score `batch`, after one warm-up call."""
    scorer(batch)
    times = []
    for _ in range(LATENCY_REPEATS):
        start = time.perf_counter()
        scorer(batch)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)
