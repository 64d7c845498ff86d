"""Serving: a model version's /predict app (FastAPI), with the exact training feature
transform compiled for requests (`compile_encoder`, proven by `check_served_features`; both
from `trainforge.features`, exported here too), contract checks, profile flags, canary routing
and batch scoring of files.

Names are imported on first use (`trainforge._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.features import (
        FeatureError,
        ServedEncoder,
        check_served_features,
        compile_encoder,
    )
    from trainforge.serving._app import create_app
    from trainforge.serving._checks import RecordChecker
    from trainforge.serving._model import ServedVersion, load_served_version
    from trainforge.serving._predict import predict_file, resolve_version
    from trainforge.serving._router import VersionRouter, stage_version

_EXPORTS = {
    "FeatureError": "trainforge.features",
    "RecordChecker": "trainforge.serving._checks",
    "ServedEncoder": "trainforge.features",
    "ServedVersion": "trainforge.serving._model",
    "VersionRouter": "trainforge.serving._router",
    "check_served_features": "trainforge.features",
    "compile_encoder": "trainforge.features",
    "create_app": "trainforge.serving._app",
    "load_served_version": "trainforge.serving._model",
    "predict_file": "trainforge.serving._predict",
    "resolve_version": "trainforge.serving._predict",
    "stage_version": "trainforge.serving._router",
}

__all__ = [
    "FeatureError",
    "RecordChecker",
    "ServedEncoder",
    "ServedVersion",
    "VersionRouter",
    "check_served_features",
    "compile_encoder",
    "create_app",
    "load_served_version",
    "predict_file",
    "resolve_version",
    "stage_version",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
