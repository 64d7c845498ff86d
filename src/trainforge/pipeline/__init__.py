"""The standard training pipeline: its DAG, its steps and `run_pipeline`."""

from trainforge.pipeline._checks import check_spec, gate_metric_names
from trainforge.pipeline._dag import build_training_dag
from trainforge.pipeline._dataset import Dataset
from trainforge.pipeline._run import (
    PipelineResult,
    default_artifact_store,
    load_checked_spec,
    run_pipeline,
)

__all__ = [
    "Dataset",
    "PipelineResult",
    "build_training_dag",
    "check_spec",
    "default_artifact_store",
    "gate_metric_names",
    "load_checked_spec",
    "run_pipeline",
]
