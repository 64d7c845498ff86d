"""Training: the Trainer and its components, batching, and weights saved as safetensors.

    >>> from trainforge.train import Trainer
    >>> result = Trainer(model, (x, y), (x_val, y_val), TrainingSpec(), task="binary").fit()
    ... # doctest: +SKIP

Components (each built from its own `TrainingSpec` section): `make_precision` (a
`Precision`), `make_strategy` (a `Strategy`), `build_optimizer` / `LRSchedule` /
`make_clipper`, `NanGuard`, `EarlyStopping`, `make_progress`; callbacks subclass `Callback`.

Names are imported on first use (`trainforge._lazy`): `logged_metric_names` and
`PreemptionNotice` come without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.train._batches import (
        Batch,
        BatchSource,
        LoaderBatches,
        TensorBatches,
        make_batches,
    )
    from trainforge.train._callbacks import Callback
    from trainforge.train._metric_names import logged_metric_names
    from trainforge.train._monitors import EarlyStopping, NanGuard
    from trainforge.train._optim import LRSchedule, build_optimizer, lr_factor, make_clipper
    from trainforge.train._precision import Precision, make_precision
    from trainforge.train._preemption import PreemptionNotice
    from trainforge.train._profiler import ProfilerCallback
    from trainforge.train._progress import make_progress
    from trainforge.train._sinks import MetricSink, NullSink
    from trainforge.train._stored import StoredModel, load_stored_model
    from trainforge.train._strategy import Strategy, make_strategy, process_group, resolve_device
    from trainforge.train._trainer import Trainer, TrainResult, TrainState, infer_task, make_loss
    from trainforge.train._weights import load_weights, save_weights

_EXPORTS = {
    "Batch": "trainforge.train._batches",
    "BatchSource": "trainforge.train._batches",
    "Callback": "trainforge.train._callbacks",
    "EarlyStopping": "trainforge.train._monitors",
    "LRSchedule": "trainforge.train._optim",
    "LoaderBatches": "trainforge.train._batches",
    "MetricSink": "trainforge.train._sinks",
    "NanGuard": "trainforge.train._monitors",
    "NullSink": "trainforge.train._sinks",
    "Precision": "trainforge.train._precision",
    "PreemptionNotice": "trainforge.train._preemption",
    "ProfilerCallback": "trainforge.train._profiler",
    "StoredModel": "trainforge.train._stored",
    "Strategy": "trainforge.train._strategy",
    "TensorBatches": "trainforge.train._batches",
    "TrainResult": "trainforge.train._trainer",
    "TrainState": "trainforge.train._trainer",
    "Trainer": "trainforge.train._trainer",
    "build_optimizer": "trainforge.train._optim",
    "infer_task": "trainforge.train._trainer",
    "load_stored_model": "trainforge.train._stored",
    "load_weights": "trainforge.train._weights",
    "logged_metric_names": "trainforge.train._metric_names",
    "lr_factor": "trainforge.train._optim",
    "make_batches": "trainforge.train._batches",
    "make_clipper": "trainforge.train._optim",
    "make_loss": "trainforge.train._trainer",
    "make_precision": "trainforge.train._precision",
    "make_progress": "trainforge.train._progress",
    "make_strategy": "trainforge.train._strategy",
    "process_group": "trainforge.train._strategy",
    "resolve_device": "trainforge.train._strategy",
    "save_weights": "trainforge.train._weights",
}

__all__ = [
    "Batch",
    "BatchSource",
    "Callback",
    "EarlyStopping",
    "LRSchedule",
    "LoaderBatches",
    "MetricSink",
    "NanGuard",
    "NullSink",
    "Precision",
    "PreemptionNotice",
    "ProfilerCallback",
    "StoredModel",
    "Strategy",
    "TensorBatches",
    "TrainResult",
    "TrainState",
    "Trainer",
    "build_optimizer",
    "infer_task",
    "load_stored_model",
    "load_weights",
    "logged_metric_names",
    "lr_factor",
    "make_batches",
    "make_clipper",
    "make_loss",
    "make_precision",
    "make_progress",
    "make_strategy",
    "process_group",
    "resolve_device",
    "save_weights",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
