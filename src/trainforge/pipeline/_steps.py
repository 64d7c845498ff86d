"""The steps of the training pipeline: each calls one stage and records what it did on the run.

Every function here takes its spec section and services first (bound by `build_training_dag`),
then named inputs, and returns a dict of named outputs; none holds state between calls. Steps
write to their run through `RunRecorder` only.
"""

from __future__ import annotations

import io
import json
import logging
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from trainforge.config import (
    Credentials,
    DataSpec,
    EvaluationSpec,
    FeaturesSpec,
    PipelineSpec,
    RegistrySpec,
)
from trainforge.entities import ModelStage, ModelVersion
from trainforge.errors import DataError, DataValidationError
from trainforge.evaluate import (
    EvalReport,
    pick_threshold,
    predict_scores,
    render_plots,
    score_report,
)
from trainforge.events import VALIDATION_FAILED, data_event
from trainforge.features import FeaturePipeline, select_features
from trainforge.ingest import IngestResult, read_table, source_fingerprint
from trainforge.models import build_model, output_size
from trainforge.pipeline._alerts import Alert
from trainforge.pipeline._cross_validation import cross_validate as run_cross_validation
from trainforge.pipeline._dataset import Dataset, check_target, encode_targets
from trainforge.pipeline._resume import checkpoint_location
from trainforge.registry import GateResult, check_gates, environment_summary
from trainforge.split import Splits, split_frame
from trainforge.storage.contracts import RegistryStore
from trainforge.tracking import RunRecorder, system_of
from trainforge.train import Callback, PreemptionNotice, Trainer, TrainResult, save_weights
from trainforge.validate import (
    QuarantineWriter,
    ValidationReport,
    frame_batches,
    load_contract,
    quarantine_frame,
)
from trainforge.versioning import DataRepository

log = logging.getLogger("trainforge")

GOLDEN_SET_ARTIFACT = "evaluation/test.parquet"
REPORT_ARTIFACT = "evaluation/report.json"
QUARANTINE_ARTIFACT = "validation/quarantine.parquet"
PLOTS_FOLDER = "evaluation/plots"
CROSS_VALIDATION_ARTIFACT = "evaluation/cross_validation.json"


@dataclass(frozen=True)
class TrainedModel:
    """The trained model, its training record, where its artifacts go, and its description
    (`model_description`: what `model/model.json` holds, and what rebuilds it)."""

    model: nn.Module
    result: TrainResult
    artifact_uri: str
    description: dict[str, Any]

    @property
    def summary(self) -> dict[str, float]:
        """The training metrics recorded as the run's summary (the last epoch's, and totals)."""
        return {**self.result.history[-1], "train_steps": float(self.result.steps),
                "train_wall_s": self.result.wall_s}


def ingest(spec: DataSpec, data: DataRepository | None, name: str,
           run: RunRecorder) -> dict[str, Any]:
    """Read the source's files, snapshotted first as a data version numbered under `name`
    (`data.snapshot`), or with `data.version` the files of that snapshot (checked out once
    into the home's cache); record the data version read."""
    cache = data.hash_cache if data is not None else None
    to_read = data_to_read(spec, name, data)
    raw = read_table(to_read.location, spec.format, to_read.options, hash_cache=cache)
    check_read(raw.fingerprint, to_read)
    run.set_data_version(raw.data_version())
    run.set_tags({"data": {"fingerprint": raw.fingerprint, "files": len(raw.files),
                           "rows": len(raw.frame), **to_read.tags()}})
    return {"read": raw}


def source_content(spec: DataSpec, data: DataRepository | None) -> dict[str, str]:
    """What ingest reads, fingerprinted without reading its rows (its cache key's data): the
    pinned `data.version`'s id, or the source's files' content id (`source_fingerprint`)."""
    if spec.version is not None:
        if data is None:
            raise DataError("data.version: pinned versions are read through the data "
                            "repository, and this run has none")
        return {"source": data.resolve(spec.version)}
    cache = data.hash_cache if data is not None else None
    return {"source": source_fingerprint(spec.source, spec.format, spec.fsspec_options(),
                                         hash_cache=cache)}


@dataclass(frozen=True)
class DataToRead:
    """Where ingest reads (`location`, its storage `options`) and the data version the files
    read must make: the pinned `data.version` (read from its checkout), or the source's
    snapshot taken just before reading (`numbered`: its `NAME@NUMBER`); `version_id` None
    when the source was not snapshotted (`data.snapshot: false`, or no data repository)."""

    location: str
    options: dict[str, Any]
    version_id: str | None = None
    pinned: bool = False
    numbered: str | None = None

    def tags(self) -> dict[str, Any]:
        """The run's `data` tags that say how the version read is kept."""
        if self.pinned:
            return {"pinned": True}
        return {"snapshot": self.numbered or self.version_id}

    def mismatch(self, fingerprint: str) -> str | None:
        """What is wrong when the files read make `fingerprint`, or None."""
        if self.version_id is None or fingerprint == self.version_id:
            return None
        if self.pinned:
            return (f"{self.location}: the checkout of data version {self.version_id} holds "
                    "other files; delete the folder and run again")
        return (f"{self.location}: its files changed while the run read them (snapshot "
                f"{self.version_id[:12]}, read {fingerprint[:12]}); run again")


def data_to_read(spec: DataSpec, name: str, data: DataRepository | None) -> DataToRead:
    """The pinned `data.version`'s checkout in the home's cache (made once), or the source,
    snapshotted under `name` first unless `data.snapshot` is false."""
    if spec.version is not None:
        if data is None:
            raise DataError("data.version: pinned versions are read through the data "
                            "repository, and this run has none")
        version_id, folder = data.materialize(spec.version)
        return DataToRead(str(folder), {}, version_id, pinned=True)
    if not spec.snapshot or data is None:
        return DataToRead(spec.source, spec.fsspec_options())
    snap = data.snapshot(spec.source, name=name, format=spec.format,
                         storage_options=spec.fsspec_options())
    numbered = f"{name}@{snap.number.tag}" if snap.number is not None else None
    return DataToRead(spec.source, spec.fsspec_options(), snap.version.data_version_id,
                      numbered=numbered)


def check_read(fingerprint: str, to_read: DataToRead) -> None:
    """DataError when the files read are not the version they had to be."""
    if (problem := to_read.mismatch(fingerprint)) is not None:
        raise DataError(problem)


def snapshot_name(spec: PipelineSpec) -> str:
    """The name the source's snapshots are numbered under: `data.name`, else the pipeline's
    name with each character a data name cannot hold as '-'."""
    if spec.data.name is not None:
        return spec.data.name
    return re.sub(r"[^A-Za-z0-9_.-]", "-", spec.name).lstrip("_.-") or "data"


def validate(spec: DataSpec, task: str, alert: Alert | None, read: IngestResult,
             run: RunRecorder) -> dict[str, Any]:
    """The schema contract (when the spec names one; its report recorded either way, and a
    broken one announced through `alert`), then the target column against the task. With
    `on_fail: quarantine` the rows breaking a row rule are written to the run's
    `validation/quarantine.parquet` and the later steps get the rest (`raw`: the rows `read`
    without them). Errors start with the data source and name file lines."""
    raw, report = read, None
    if spec.contract is not None:
        contract = load_contract(spec.contract)
        try:
            report, broken = quarantine_frame(raw.frame, contract, spec.on_fail, raw.locate,
                                              raw.source, contract_file=spec.contract)
        except DataValidationError as exc:
            record_validation(run, exc.report, raw.source, raw.fingerprint, alert)
            raise
        quarantined = 0
        if spec.on_fail == "quarantine" and broken.any():
            quarantined = _quarantine(run, raw, broken)
            raw = raw.without_rows(broken)
        record_validation(run, report, raw.source, raw.fingerprint, alert, quarantined)
    check_target(raw.frame, spec, task, raw.locate, raw.source)
    return {"validation": report, "raw": raw}


def _quarantine(run: RunRecorder, raw: IngestResult, broken: np.ndarray) -> int:
    """Write the rows `broken` masks to the run's quarantine artifact; how many."""
    with tempfile.TemporaryDirectory() as folder:
        writer = QuarantineWriter(Path(folder) / "quarantine.parquet")
        for start, batch in frame_batches(raw.frame):
            writer.write(batch, broken[start:start + batch.num_rows], _from(raw, start))
        path = writer.close()
        assert path is not None
        run.log_artifact(path, QUARANTINE_ARTIFACT)
        return writer.rows


def _from(raw: IngestResult, start: int) -> Callable[[int], str]:
    """Where row `i` of a batch starting at row `start` of `raw.frame` came from."""
    return lambda row: raw.locate(start + row)


def record_validation(run: RunRecorder, report: ValidationReport, source: str,
                      data_version_id: str, alert: Alert | None, quarantined: int = 0) -> None:
    """The contract's report as `validation/report.json` and the `validation` tag; a broken
    contract announced through `alert`, which records the tag again with its event (the tag
    goes through `run` first, so a run that reuses this step from the cache gets it too)."""
    run.put_artifact("validation/report.json", json.dumps(report.to_dict(), indent=2).encode())
    tags = {"validation": {"passed": report.passed, "violations": len(report.violations),
                           "quarantined": quarantined}}
    run.set_tags(tags)
    if report.passed or alert is None:
        return
    summary = report.summary().splitlines()[0]
    alert(run, tags, data_event(VALIDATION_FAILED, run_id=run.run_id,
                                experiment_id=run.info().experiment_id, source=source,
                                data_version_id=data_version_id,
                                summary=f"{source}: {summary}", report=report.to_dict()))


def split(spec: DataSpec, raw: IngestResult, validation: ValidationReport | None) -> dict[str, Any]:
    return {"splits": split_frame(raw.frame, spec.split, raw.locate)}


def features(
    spec: FeaturesSpec, data: DataSpec, task: str, raw: IngestResult, splits: Splits,
    run: RunRecorder,
) -> dict[str, Any]:
    """Fit the feature pipeline on the training split (columns `include` adds written out) and
    encode every split, naming the file lines of rows it cannot encode. Columns left unused are
    logged in one warning and recorded in the `features` tag as `unused`."""
    selection = select_features(spec, splits.train, data.reserved_columns)
    pipeline = FeaturePipeline.from_spec(selection.spec).fit(splits.train)
    record_features(run, pipeline, selection.unused)
    parts = (splits.train, splits.val, splits.test)
    classes, targets = encode_targets(parts, data, task)
    matrices = [pipeline.transform(part, _locate_part(raw, positions))
                for part, positions in zip(parts, splits.positions, strict=True)]
    dataset = Dataset(
        train=(matrices[0], targets[0]),
        val=(matrices[1], targets[1]),
        test=(matrices[2], targets[2]),
        feature_names=tuple(pipeline.feature_names),
        classes=classes,
    )
    return {"dataset": dataset, "feature_pipeline": pipeline}


def record_features(run: RunRecorder, pipeline: FeaturePipeline, unused: Sequence[str]) -> None:
    """The fitted pipeline as `features/pipeline.json` and the `features` tag; columns left
    unused logged in one warning."""
    if unused:
        log.warning(
            "features: %d data column(s) are not used: %s (name them in features.transforms "
            "or features.passthrough, list them in features.exclude, or set features.include: "
            "remaining)", len(unused), ", ".join(unused))
    run.put_artifact("features/pipeline.json", pipeline.to_json().encode())
    run.set_tags({"features": {"hash": pipeline.content_hash,
                               "count": len(pipeline.feature_names), "unused": list(unused)}})


def _locate_part(raw: IngestResult, positions: np.ndarray) -> Callable[[int], str]:
    """Where row `i` of a split part came from: its file and line in the data read."""
    return lambda row: raw.locate(int(positions[row]))


def new_model(spec: PipelineSpec, dataset: Dataset) -> nn.Module:
    """The spec's model for the dataset's features and classes, its initial weights fixed by
    `training.seed` (the process's generator left as found)."""
    with torch.random.fork_rng():
        torch.manual_seed(spec.training.seed)
        return build_model(spec.model, dataset.num_features,
                           output_size(spec.model.task, len(dataset.classes)))


def train(spec: PipelineSpec, callbacks: tuple[Callback, ...],
          preemption: PreemptionNotice | None, credentials: Credentials, dataset: Dataset,
          run: RunRecorder) -> dict[str, Any]:
    """Train on `dataset`, checkpointing to the spec's location (default: the run's
    artifacts), opened with the options `credentials` give it (a spec's own, or the token of
    a server's artifact proxy)."""
    model = new_model(spec, dataset)
    location = checkpoint_location(spec.training.checkpoint, run.run_id, run.artifact_uri())
    trainer = Trainer(model, dataset.train, dataset.val, spec.training, spec.model.task, run,
                      spec.evaluation, callbacks, checkpoint_dir=location, resume=True,
                      preemption=preemption, checkpoint_options=credentials.options_for(location))
    result = trainer.fit()
    trained = TrainedModel(result.model, result, run.artifact_uri("model"),
                           model_description(spec, dataset))
    run.set_summary(trained.summary)
    with tempfile.TemporaryDirectory() as tmp:
        weights = save_weights(result.model, Path(tmp) / "weights.safetensors")
        run.log_artifact(weights, "model/weights.safetensors")
    run.put_artifact("model/model.json", json.dumps(trained.description, indent=2).encode())
    return {"trained": trained}


def model_description(spec: PipelineSpec, dataset: Dataset) -> dict[str, Any]:
    """The spec's model section, its sizes for `dataset`, the feature names and classes."""
    return {
        "model": spec.model.model_dump(mode="json"),
        "in_features": dataset.num_features,
        "out_features": output_size(spec.model.task, len(dataset.classes)),
        "feature_names": list(dataset.feature_names),
        "classes": list(dataset.classes),
    }


def evaluate(spec: EvaluationSpec, task: str, trained: TrainedModel, dataset: Dataset,
             splits: Splits, run: RunRecorder) -> dict[str, Any]:
    """Score the test split at the decision threshold (binary: fixed, or chosen on the
    validation split) and per slice of its raw rows; record the `test_*` metrics and
    `threshold` as summary, `evaluation/report.json` and the plots (`evaluation/plots/`). Keep
    the test split's raw records (`evaluation/test.parquet`, every column as read): the golden
    set a promotion re-scores the production model on and a served pipeline must reproduce
    the training features from."""
    features_, targets = dataset.test
    threshold = None
    if task == "binary":
        val_features, val_targets = dataset.val
        val_scores = (predict_scores(trained.model, val_features, task)
                      if spec.threshold == "auto" else None)
        threshold = pick_threshold(spec, val_scores, val_targets)
    scores = predict_scores(trained.model, features_, task)
    report = score_report(scores, targets, task, spec, "test", threshold=threshold,
                          frame=splits.test)
    run.set_summary(report.prefixed())
    if threshold is not None:
        run.set_summary({"threshold": threshold.value})
    run.put_artifact(REPORT_ARTIFACT, json.dumps(report.to_dict(), indent=2).encode())
    if spec.plots:
        for name, png in render_plots(scores, targets, task, report, dataset.classes).items():
            run.put_artifact(f"{PLOTS_FOLDER}/{name}", png)
    buffer = io.BytesIO()
    splits.test.reset_index(drop=True).to_parquet(buffer, index=False)
    run.put_artifact(GOLDEN_SET_ARTIFACT, buffer.getvalue())
    return {"evaluation": report}


def cross_validate(spec: PipelineSpec, splits: Splits, dataset: Dataset,
                   run: RunRecorder) -> dict[str, Any]:
    """k folds over the train and validation rows (`pipeline/_cross_validation.py`): each
    trained and scored quietly; `cv_<metric>_mean` / `_std` recorded as summary and the
    per-fold figures as `evaluation/cross_validation.json`. Runs after the features step
    (`dataset`), so the spec's feature problems surface before any fold trains."""
    result = run_cross_validation(spec, splits)
    run.set_summary(result.summary())
    run.put_artifact(CROSS_VALIDATION_ARTIFACT, json.dumps(result.to_dict(), indent=2).encode())
    return {"cross_validation": result}


def gate(spec: EvaluationSpec, trained: TrainedModel, evaluation: EvalReport,
         run: RunRecorder) -> dict[str, Any]:
    metrics = {**trained.summary, **evaluation.prefixed()}
    result = check_gates(metrics, spec.gates)
    run.set_tags({"gates": result.to_dict()})
    return {"gate": result}


def register(spec: RegistrySpec | None, registry: RegistryStore | None, trained: TrainedModel,
             evaluation: EvalReport, gate: GateResult, splits: Splits,
             feature_pipeline: FeaturePipeline, run: RunRecorder) -> dict[str, Any]:
    """A version in `staging` with its lineage (data version, git commit, the feature
    pipeline's hash, the environment) when the gates passed; nothing otherwise.
    `FeatureMismatch` first when the served feature encoder does not reproduce the training
    features on the golden set (the test split)."""
    if spec is None or registry is None or not gate.passed:
        return {"model_version": None}
    from trainforge.features import check_served_features

    check_served_features(feature_pipeline, splits.test, run.run_id)
    info = run.info()
    version: ModelVersion = registry.create_model_version(
        spec.model_name,
        run.run_id,
        trained.artifact_uri,
        ModelStage.STAGING,
        metrics=evaluation.prefixed(),
        data_version_id=info.data_version_id,
        git_commit=info.git_commit,
        features_hash=feature_pipeline.content_hash,
        environment=environment_summary(info.environment),
        user=process.user if (process := system_of(info).process) is not None else "",
    )
    run.set_tags({"model_version": f"{version.model_name}/{version.version}"})
    return {"model_version": version}
