"""The standard training pipeline: its DAG, its steps, `run_pipeline` and `launch_pipeline`
(the same run over torchrun workers), and a run's checkpoints listed and pruned afterwards."""

from trainforge.pipeline._checkpoints import (
    checkpoint_policy,
    gc_run_checkpoints,
    list_run_checkpoints,
    open_run_checkpoints,
)
from trainforge.pipeline._checks import check_spec, gate_metric_names
from trainforge.pipeline._dag import build_training_dag
from trainforge.pipeline._dataset import Dataset
from trainforge.pipeline._distributed import Launch, launch_pipeline
from trainforge.pipeline._identity import spec_hash
from trainforge.pipeline._plan import PipelinePlan, plan_pipeline
from trainforge.pipeline._run import (
    PipelineResult,
    PipelineServices,
    load_checked_spec,
    run_pipeline,
)

__all__ = [
    "Dataset",
    "Launch",
    "PipelinePlan",
    "PipelineResult",
    "PipelineServices",
    "build_training_dag",
    "check_spec",
    "checkpoint_policy",
    "gate_metric_names",
    "gc_run_checkpoints",
    "launch_pipeline",
    "list_run_checkpoints",
    "load_checked_spec",
    "open_run_checkpoints",
    "plan_pipeline",
    "run_pipeline",
    "spec_hash",
]
