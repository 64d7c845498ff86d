"""The training pipeline's values as value-store types (`orchestration/value_types.py`), so each
standard step's outputs are stored with its step run and a resumed pipeline run reuses those
of the steps that succeeded.

Stored as their fields: the data read (without its line map: a restored one scans its text
files again when a row is located, if their bytes are still those read), the validation and
drift reports, the splits, the encoded dataset, the evaluation and cross-validation reports,
the gate's result and the model version. A data profile is stored as its own bytes; a
trained model as its weights, its training record and the description it is rebuilt from
(the spec's model section and its sizes). A streaming source's data, splits and dataset are
stored as their plan: the files and row groups listed, each row's part, the fitted features
and targets, reopened through the source's file system on decode. The plan keeps the names
of the source's `data.storage_options`, never their values (credentials, an endpoint): it
reopens with the options the decoding session's credentials give for the source (its
`DecodeContext`; `ingest/_reopen.py`).

Importing this module registers them (`build_training_dag` does; a process decoding one does
through the value's header).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import torch

from trainforge.config import ModelSpec, SplitSpec
from trainforge.entities import ModelStage, ModelVersion
from trainforge.evaluate import EvalReport, ThresholdChoice
from trainforge.features import FeaturePipeline
from trainforge.ingest import (
    IngestResult,
    SourceFile,
    SourceFileInfo,
    SourceListing,
    StoredLineMaps,
    option_names,
    reopen_filesystem,
)
from trainforge.models import build_model
from trainforge.orchestration.value_types import DecodeContext, register_value_type
from trainforge.pipeline._cross_validation import CrossValidation
from trainforge.pipeline._dataset import Dataset
from trainforge.pipeline._steps import TrainedModel
from trainforge.pipeline._streaming import StreamedData, StreamedSplits
from trainforge.profiles import ColumnDrift, DatasetProfile, DriftReport
from trainforge.registry import GateResult
from trainforge.split import Splits
from trainforge.streaming import (
    RankedValue,
    RowGroup,
    RowGroupPlan,
    StreamingSource,
    StreamSplit,
    TargetEncoder,
)
from trainforge.train import TrainResult
from trainforge.validate import ValidationReport, Violation


def _ingested(value: IngestResult) -> dict[str, Any]:
    return {"frame": value.frame, "files": value.files, "source": value.source,
            "positions": value.positions}


def _ingest_result(state: dict[str, Any], context: DecodeContext) -> IngestResult:
    return IngestResult(frame=state["frame"], files=state["files"], source=state["source"],
                        lines=StoredLineMaps(state["files"], state["source"],
                                             context.credentials),
                        positions=state["positions"])


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


def _plan_state(plan: RowGroupPlan) -> dict[str, Any]:
    listing = plan.listing
    number = {file.path: index for index, file in enumerate(listing.files)}
    return {"source": listing.source, "options": option_names(listing.fs),
            "files": [tuple(file) for file in listing.files],
            "partition_types": listing.partition_types,
            "groups": [(number[group.file.path], group.index, group.first_row, group.rows)
                       for group in plan.groups],
            "schema": plan.schema.serialize().to_pybytes()}


def _row_group_plan(state: dict[str, Any], context: DecodeContext) -> RowGroupPlan:
    fs = reopen_filesystem(state["source"], state["options"], context.credentials)
    files = tuple(SourceFileInfo(*fields) for fields in state["files"])
    listing = SourceListing(state["source"], files, fs, tuple(state["partition_types"]))
    groups = tuple(RowGroup(files[file], index, first, rows)
                   for file, index, first, rows in state["groups"])
    return RowGroupPlan(listing, groups, pa.ipc.read_schema(pa.py_buffer(state["schema"])))


def _split_state(split: StreamSplit) -> dict[str, Any]:
    return {"plan": split.plan, "spec": split.spec.model_dump(mode="json"), "cuts": split.cuts,
            "counts": split.counts}


def _stream_split(state: dict[str, Any]) -> StreamSplit:
    return StreamSplit(state["plan"], SplitSpec.model_validate(state["spec"]), state["cuts"],
                       state["counts"])


for _cls in (SourceFile, Violation, ValidationReport, ColumnDrift, DriftReport, Splits,
             Dataset, ThresholdChoice, EvalReport, CrossValidation, GateResult, ModelVersion,
             ModelStage, StreamedData, StreamedSplits, StreamingSource, TargetEncoder,
             RankedValue):
    register_value_type(_cls, module=__name__)
register_value_type(RowGroupPlan, module=__name__, to_state=_plan_state,
                    from_state=_row_group_plan, context=True)
register_value_type(StreamSplit, module=__name__, to_state=_split_state,
                    from_state=_stream_split)
register_value_type(FeaturePipeline, module=__name__, to_state=FeaturePipeline.to_json,
                    from_state=FeaturePipeline.from_json)
register_value_type(IngestResult, module=__name__, to_state=_ingested,
                    from_state=_ingest_result, context=True)
register_value_type(DatasetProfile, module=__name__, to_state=DatasetProfile.to_bytes,
                    from_state=_profile)
register_value_type(TrainedModel, module=__name__, to_state=_trained_state,
                    from_state=_trained_model)
