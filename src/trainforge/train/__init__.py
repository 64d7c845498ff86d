"""Training: the Trainer and its components, batching, and weights saved as safetensors.

    >>> from trainforge.train import Trainer
    >>> result = Trainer(model, (x, y), (x_val, y_val), TrainingSpec(), task="binary").fit()
    ... # doctest: +SKIP

Components (each built from its own `TrainingSpec` section): `make_precision` (a
`Precision`), `make_strategy` (a `Strategy`), `build_optimizer` / `LRSchedule` /
`make_clipper`, `NanGuard`, `EarlyStopping`, `make_progress`; callbacks subclass `Callback`.
"""

from trainforge.train._batches import LoaderBatches, TensorBatches, make_batches
from trainforge.train._callbacks import Callback
from trainforge.train._monitors import EarlyStopping, NanGuard, logged_metric_names
from trainforge.train._optim import LRSchedule, build_optimizer, lr_factor, make_clipper
from trainforge.train._precision import Precision, make_precision
from trainforge.train._preemption import PreemptionNotice
from trainforge.train._profiler import ProfilerCallback
from trainforge.train._progress import make_progress
from trainforge.train._sinks import MetricSink, NullSink
from trainforge.train._strategy import Strategy, make_strategy, process_group, resolve_device
from trainforge.train._trainer import (
    Trainer,
    TrainResult,
    TrainState,
    infer_task,
    make_loss,
)
from trainforge.train._weights import load_weights, save_weights

__all__ = [
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
    "Strategy",
    "TensorBatches",
    "TrainResult",
    "TrainState",
    "Trainer",
    "build_optimizer",
    "infer_task",
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
