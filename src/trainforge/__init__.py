"""trainforge: declared training pipelines into tracked, resumable runs and registered models.

    >>> from trainforge import run_pipeline
    >>> result = run_pipeline("examples/fraud/pipeline.yaml")  # doctest: +SKIP
    >>> result.model_version.stage                            # doctest: +SKIP
    <ModelStage.STAGING: 'staging'>

Names are imported on first use, so `import trainforge.config` does not pull in torch.
"""

from __future__ import annotations

from trainforge._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "PipelineSpec": "trainforge.config",
    "load_spec": "trainforge.config",
    "CheckpointRecord": "trainforge.entities",
    "DataVersion": "trainforge.entities",
    "Experiment": "trainforge.entities",
    "MetricPoint": "trainforge.entities",
    "ModelStage": "trainforge.entities",
    "ModelVersion": "trainforge.entities",
    "Run": "trainforge.entities",
    "RunStatus": "trainforge.entities",
    "ArtifactError": "trainforge.errors",
    "CheckpointError": "trainforge.errors",
    "Conflict": "trainforge.errors",
    "DataError": "trainforge.errors",
    "DataNotFound": "trainforge.errors",
    "DataValidationError": "trainforge.errors",
    "NotFound": "trainforge.errors",
    "ObjectNotFound": "trainforge.errors",
    "ObjectStoreError": "trainforge.errors",
    "Preempted": "trainforge.errors",
    "Pruned": "trainforge.errors",
    "ResumeRefused": "trainforge.errors",
    "RunFailed": "trainforge.errors",
    "RunPreempted": "trainforge.errors",
    "RunPruned": "trainforge.errors",
    "SpecError": "trainforge.errors",
    "StoreError": "trainforge.errors",
    "TrainforgeError": "trainforge.errors",
    "TrainingError": "trainforge.errors",
    "PipelineResult": "trainforge.pipeline",
    "run_pipeline": "trainforge.pipeline",
    "open_store": "trainforge.storage",
    "QueryError": "trainforge.errors",
    "StoreUnavailable": "trainforge.errors",
    "RunHandle": "trainforge.tracking",
    "active_run": "trainforge.tracking",
    "compare_runs": "trainforge.tracking",
    "get_metric_history": "trainforge.tracking",
    "get_run": "trainforge.tracking",
    "search_runs": "trainforge.tracking",
    "start_run": "trainforge.tracking",
    "Trainer": "trainforge.train",
}

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
