"""The standard training pipeline: its DAG, its steps, `run_pipeline` and `launch_pipeline`
(the same run over torchrun workers), a run's checkpoints listed and pruned afterwards, and
registered pipelines with the submissions they take.

Names are imported on first use (`trainforge._lazy`): `load_checked_spec` (what
`trainforge validate` runs) comes without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.orchestration.executors import Launch
    from trainforge.pipeline._checkpoints import (
        checkpoint_policy,
        gc_run_checkpoints,
        list_run_checkpoints,
        open_run_checkpoints,
        spec_storage_options,
    )
    from trainforge.pipeline._checks import check_spec, gate_metric_names
    from trainforge.pipeline._dag import build_training_dag
    from trainforge.pipeline._dataset import Dataset
    from trainforge.pipeline._distributed import (
        DISTRIBUTED_RECORD,
        launch_pipeline,
        parse_nodes,
    )
    from trainforge.pipeline._identity import spec_hash
    from trainforge.pipeline._plan import PipelinePlan, load_checked_spec, plan_pipeline
    from trainforge.pipeline._registered import (
        JobResources,
        Submission,
        register_pipeline,
        registration,
        resolve_submission,
        submission_keys,
    )
    from trainforge.pipeline._resume import checkpoint_location, checkpoint_record
    from trainforge.pipeline._run import PipelineResult, run_pipeline

_EXPORTS = {
    "Dataset": "trainforge.pipeline._dataset",
    "JobResources": "trainforge.pipeline._registered",
    "Submission": "trainforge.pipeline._registered",
    "register_pipeline": "trainforge.pipeline._registered",
    "registration": "trainforge.pipeline._registered",
    "resolve_submission": "trainforge.pipeline._registered",
    "submission_keys": "trainforge.pipeline._registered",
    "DISTRIBUTED_RECORD": "trainforge.pipeline._distributed",
    "Launch": "trainforge.orchestration.executors",
    "PipelinePlan": "trainforge.pipeline._plan",
    "PipelineResult": "trainforge.pipeline._run",
    "build_training_dag": "trainforge.pipeline._dag",
    "check_spec": "trainforge.pipeline._checks",
    "checkpoint_location": "trainforge.pipeline._resume",
    "checkpoint_policy": "trainforge.pipeline._checkpoints",
    "checkpoint_record": "trainforge.pipeline._resume",
    "gate_metric_names": "trainforge.pipeline._checks",
    "gc_run_checkpoints": "trainforge.pipeline._checkpoints",
    "launch_pipeline": "trainforge.pipeline._distributed",
    "list_run_checkpoints": "trainforge.pipeline._checkpoints",
    "load_checked_spec": "trainforge.pipeline._plan",
    "open_run_checkpoints": "trainforge.pipeline._checkpoints",
    "spec_storage_options": "trainforge.pipeline._checkpoints",
    "parse_nodes": "trainforge.pipeline._distributed",
    "plan_pipeline": "trainforge.pipeline._plan",
    "run_pipeline": "trainforge.pipeline._run",
    "spec_hash": "trainforge.pipeline._identity",
}

__all__ = [
    "DISTRIBUTED_RECORD",
    "Dataset",
    "JobResources",
    "Launch",
    "PipelinePlan",
    "PipelineResult",
    "Submission",
    "build_training_dag",
    "check_spec",
    "checkpoint_location",
    "checkpoint_policy",
    "checkpoint_record",
    "gate_metric_names",
    "gc_run_checkpoints",
    "launch_pipeline",
    "list_run_checkpoints",
    "load_checked_spec",
    "open_run_checkpoints",
    "parse_nodes",
    "plan_pipeline",
    "register_pipeline",
    "registration",
    "resolve_submission",
    "run_pipeline",
    "spec_hash",
    "spec_storage_options",
    "submission_keys",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
