"""Export: a run's model as ONNX (fp32, dynamic int8) or TorchScript, each variant checked for
parity, metric, latency and size on the run's golden set, with the serving bundle beside it.

Names are imported on first use (`trainforge._lazy`): `ExportReport` comes without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.export._export import export_model, read_export_report, read_golden_set
    from trainforge.export._formats import ScoreHead, export_onnx, export_onnx_legacy
    from trainforge.export._report import ExportReport, VariantReport, judge_variant

_EXPORTS = {
    "ExportReport": "trainforge.export._report",
    "ScoreHead": "trainforge.export._formats",
    "VariantReport": "trainforge.export._report",
    "export_model": "trainforge.export._export",
    "export_onnx": "trainforge.export._formats",
    "export_onnx_legacy": "trainforge.export._formats",
    "judge_variant": "trainforge.export._report",
    "read_export_report": "trainforge.export._export",
    "read_golden_set": "trainforge.export._export",
}

__all__ = [
    "ExportReport",
    "ScoreHead",
    "VariantReport",
    "export_model",
    "export_onnx",
    "export_onnx_legacy",
    "judge_variant",
    "read_export_report",
    "read_golden_set",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
