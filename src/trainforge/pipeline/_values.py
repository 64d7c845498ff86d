"""The training pipeline's values as value-store types (`orchestration/value_types.py`), so each
standard step's outputs are stored with its step run and a resumed pipeline run reuses those
of the steps that succeeded.

Stored as their fields: the data read (without its line map: a restored one scans its text
files again when a row is located, if their bytes are still those read), the validation and
drift reports, the splits, the encoded dataset, the evaluation and cross-validation reports,
the gate's result and the model version. A data profile is stored as its own bytes; a
trained model as its weights, its training record and the description it is rebuilt from
(the spec's model section and its sizes). A streaming source's data and dataset are read
while training and are not stored: they stay in memory.

Importing this module registers them (`build_training_dag` does; a process decoding one does
through the value's header).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from trainforge.config import ModelSpec
from trainforge.entities import ModelStage, ModelVersion
from trainforge.evaluate import EvalReport
from trainforge.evaluate._threshold import ThresholdChoice
from trainforge.ingest import IngestResult
from trainforge.ingest._result import SourceFile
from trainforge.ingest._stream import StoredLineMaps
from trainforge.models import build_model
from trainforge.orchestration.value_types import register_value_type
from trainforge.pipeline._cross_validation import CrossValidation
from trainforge.pipeline._dataset import Dataset
from trainforge.pipeline._steps import TrainedModel
from trainforge.profiles import DatasetProfile
from trainforge.profiles._drift import ColumnDrift, DriftReport
from trainforge.registry import GateResult
from trainforge.split import Splits
from trainforge.train import TrainResult
from trainforge.validate import ValidationReport
from trainforge.validate._report import Violation


def _ingested(value: IngestResult) -> dict[str, Any]:
    return {"frame": value.frame, "files": value.files, "source": value.source,
            "positions": value.positions}


def _ingest_result(state: dict[str, Any]) -> IngestResult:
    return IngestResult(frame=state["frame"], files=state["files"], source=state["source"],
                        lines=StoredLineMaps(state["files"]), positions=state["positions"])


def _profile(state: bytes) -> DatasetProfile:
    return DatasetProfile.from_bytes(state, "a stored data profile")


def _trained_state(value: TrainedModel) -> dict[str, Any]:
    result = value.result
    return {
        "weights": dict(value.model.state_dict()),
        "description": value.description,
        "artifact_uri": value.artifact_uri,
        "result": {"epochs": result.epochs, "steps": result.steps, "history": result.history,
                   "wall_s": result.wall_s, "stopped_early": result.stopped_early,
                   "skipped_steps": result.skipped_steps,
                   "profile_trace": None if result.profile_trace is None
                   else str(result.profile_trace)},
    }


def _trained_model(state: dict[str, Any]) -> TrainedModel:
    description = state["description"]
    with torch.random.fork_rng():
        model = build_model(ModelSpec.model_validate(description["model"]),
                            description["in_features"], description["out_features"])
    model.load_state_dict(state["weights"])
    model.eval()
    record = state["result"]
    trace = record["profile_trace"]
    result = TrainResult(model, record["epochs"], record["steps"], record["history"],
                         record["wall_s"], record["stopped_early"], record["skipped_steps"],
                         None if trace is None else Path(trace))
    return TrainedModel(model, result, state["artifact_uri"], description)


for _cls in (SourceFile, Violation, ValidationReport, ColumnDrift, DriftReport, Splits,
             Dataset, ThresholdChoice, EvalReport, CrossValidation, GateResult, ModelVersion,
             ModelStage):
    register_value_type(_cls, module=__name__)
register_value_type(IngestResult, module=__name__, to_state=_ingested,
                    from_state=_ingest_result)
register_value_type(DatasetProfile, module=__name__, to_state=DatasetProfile.to_bytes,
                    from_state=_profile)
register_value_type(TrainedModel, module=__name__, to_state=_trained_state,
                    from_state=_trained_model)
