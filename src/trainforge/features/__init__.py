"""Features: the Transform contract, built-in transforms, the FeaturePipeline, and the same
pipeline compiled for served records (`compile_encoder`, checked by `check_served_features`).

Every transform is fitted on the training split only and saved as JSON (never pickled);
`select_features` writes out the columns `features.include: remaining` adds.
"""

from __future__ import annotations

from trainforge.features._base import Scalar, Transform, numeric_values, ranked_values
from trainforge.features._encoder import (
    FeatureError,
    ServedEncoder,
    check_served_features,
    compile_encoder,
    row_check_sample,
)
from trainforge.features._impute import Impute
from trainforge.features._onehot import OneHot
from trainforge.features._pipeline import FeaturePipeline
from trainforge.features._scale import MinMax, Standardize
from trainforge.features._select import Selection, select_features

__all__ = [
    "FeatureError",
    "FeaturePipeline",
    "Impute",
    "MinMax",
    "OneHot",
    "Scalar",
    "Selection",
    "ServedEncoder",
    "Standardize",
    "Transform",
    "check_served_features",
    "compile_encoder",
    "numeric_values",
    "ranked_values",
    "row_check_sample",
    "select_features",
]
