"""Writing a scored module to the exported formats: ONNX (torch's current exporter, the legacy
TorchScript-based one when it fails), dynamic int8 quantization of an ONNX file, TorchScript.

Every format holds `ScoreHead(module, task)`: the model with its score function (sigmoid,
softmax or none), so a runtime returns the same scores as `predict_scores`, with a dynamic
batch axis. Exporter warnings, prints and log lines are kept out of the user's output by
swapping `sys.stdout` / `sys.stderr` and logger levels while an exporter runs: process-wide
effects, so export belongs to an entry point (the CLI, a script), not to a serving process.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import nn

INPUT_NAME = "features"
OUTPUT_NAME = "scores"


class ScoreHead(nn.Module):
    """A model whose output is its scores: positive-class probability (binary), class
    probabilities (multiclass) or the prediction (regression)."""

    def __init__(self, module: nn.Module, task: str) -> None:
        super().__init__()
        self.module = module
        self.task = task

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        outputs = self.module(features).float()
        if self.task == "binary":
            return torch.sigmoid(outputs.squeeze(-1))
        if self.task == "multiclass":
            return torch.softmax(outputs, dim=-1)
        return outputs.squeeze(-1)


def export_onnx(head: ScoreHead, example: torch.Tensor, path: Path) -> str:
    """Write `head` as ONNX with torch's current (dynamo) exporter; when that raises, with the
    legacy one. Returns the exporter that wrote it: "dynamo" or "legacy"."""
    try:
        with _quiet():
            program = torch.onnx.export(
                head, (example,), dynamo=True, input_names=[INPUT_NAME],
                output_names=[OUTPUT_NAME],
                dynamic_shapes=({0: torch.export.Dim("batch", min=1)},))
            assert program is not None
            program.save(str(path))
    except Exception as exc:  # the exporter fails in many ways (torch.export, onnxscript)
        logging.getLogger("trainforge").info("dynamo ONNX exporter failed (%s); using the "
                                             "legacy exporter", type(exc).__name__)
        export_onnx_legacy(head, example, path)
        return "legacy"
    return "dynamo"


def export_onnx_legacy(head: ScoreHead, example: torch.Tensor, path: Path) -> None:
    """Write `head` as ONNX with the legacy TorchScript-based exporter."""
    with _quiet():
        torch.onnx.export(head, (example,), str(path), dynamo=False, input_names=[INPUT_NAME],
                          output_names=[OUTPUT_NAME],
                          dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}})


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantization of the weights of an ONNX file (onnxruntime's)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet():
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)


def export_torchscript(head: ScoreHead, example: torch.Tensor, path: Path) -> None:
    """`torch.jit.trace` of `head` (torch marks TorchScript deprecated: only when asked)."""
    with _quiet(), torch.no_grad():
        traced = torch.jit.trace(head, (example,))
        traced.save(str(path))


def load_torchscript(path: Path) -> torch.jit.ScriptModule:
    """A TorchScript file loaded back (without torch's deprecation warning)."""
    with _quiet():
        return torch.jit.load(str(path))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Exporter warnings and the exporter's own printing and log lines, swallowed."""
    names = ("torch.onnx", "torch.export", "onnxscript", None)  # None: the root logger,
    loggers = [logging.getLogger(name) for name in names]  # which quantization logs to
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
