"""Training: the Trainer, its batching, and weights saved as safetensors."""

from trainforge.train._batches import TensorBatches
from trainforge.train._trainer import MetricSink, Trainer, TrainResult, make_loss, resolve_device
from trainforge.train._weights import load_weights, save_weights

__all__ = [
    "MetricSink",
    "TensorBatches",
    "TrainResult",
    "Trainer",
    "load_weights",
    "make_loss",
    "resolve_device",
    "save_weights",
]
