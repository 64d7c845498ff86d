"""Features: the Transform contract, built-in transforms and the FeaturePipeline.

Every transform is fitted on the training split only and saved as JSON (never pickled).
"""

from __future__ import annotations

from trainforge.features._base import Transform
from trainforge.features._impute import Impute
from trainforge.features._onehot import OneHot
from trainforge.features._pipeline import FeaturePipeline
from trainforge.features._scale import MinMax, Standardize

__all__ = ["FeaturePipeline", "Impute", "MinMax", "OneHot", "Standardize", "Transform"]
