"""Export: a run's model as ONNX (fp32, dynamic int8) or TorchScript, each variant checked for
parity, metric, latency and size on the run's golden set, with the serving bundle beside it.

Names are imported on first use (`trainforge._lazy`): `ExportReport` comes without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.export._bundle import (
        read_contract,
        read_export_report,
        read_golden_set,
        served_contract,
        training_profile,
    )
    from trainforge.export._export import export_model
    from trainforge.export._formats import INPUT_NAME, ScoreHead, export_onnx, export_onnx_legacy
    from trainforge.export._report import (
        REPORT_ARTIFACT,
        ExportReport,
        VariantReport,
        judge_variant,
    )

_EXPORTS = {
    "ExportReport": "trainforge.export._report",
    "INPUT_NAME": "trainforge.export._formats",
    "REPORT_ARTIFACT": "trainforge.export._report",
    "ScoreHead": "trainforge.export._formats",
    "VariantReport": "trainforge.export._report",
    "export_model": "trainforge.export._export",
    "export_onnx": "trainforge.export._formats",
    "export_onnx_legacy": "trainforge.export._formats",
    "judge_variant": "trainforge.export._report",
    "read_contract": "trainforge.export._bundle",
    "read_export_report": "trainforge.export._bundle",
    "read_golden_set": "trainforge.export._bundle",
    "served_contract": "trainforge.export._bundle",
    "training_profile": "trainforge.export._bundle",
}

__all__ = [
    "ExportReport",
    "INPUT_NAME",
    "REPORT_ARTIFACT",
    "ScoreHead",
    "VariantReport",
    "export_model",
    "export_onnx",
    "export_onnx_legacy",
    "judge_variant",
    "read_contract",
    "read_export_report",
    "read_golden_set",
    "served_contract",
    "training_profile",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
