"""Which data columns become features when a spec does not name them all (`features.include`).

Rules:
- A column is named when it is reserved (the target, the time column), feeds a transform, or
  is listed in `passthrough` or `exclude`. The training frame's other columns, in its order,
  are the remaining ones.
- include: listed: the remaining columns are left out; `Selection.unused` lists them, for the
  caller to warn about.
- include: remaining: numeric and boolean columns join `passthrough`; the others are one-hot
  encoded by one more one_hot transform (its defaults), run after the listed transforms.
  Datetime and timedelta columns can be neither: a DataError names them and `exclude`.
- The selection is a plain `FeaturesSpec` with every used column written out, so the fitted
  pipeline saves, loads and transforms as any other; serving needs no list of data columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from pandas.api import types as ptypes

from trainforge.config import FeaturesSpec, OneHotSpec
from trainforge.errors import DataError


@dataclass(frozen=True)
class Selection:
    """`spec` with the columns `include` adds written out, and the columns left `unused`."""

    spec: FeaturesSpec
    unused: tuple[str, ...]


def select_features(
    spec: FeaturesSpec, frame: pd.DataFrame, reserved: Sequence[str]
) -> Selection:
    """The features of `frame` (the training split) that `spec` uses, as the rules above say.

    >>> spec = FeaturesSpec(include="remaining", exclude=["id"])
    >>> frame = pd.DataFrame({"id": ["a"], "x": [1.0], "city": ["rome"], "y": [0]})
    >>> chosen = select_features(spec, frame, reserved=["y"]).spec
    >>> chosen.passthrough, chosen.transforms[0].columns
    (['x'], ['city'])
    """
    named = {*reserved, *spec.passthrough, *spec.exclude}
    named.update(c for transform in spec.transforms for c in transform.columns)
    remaining = [c for c in frame.columns if c not in named]
    if spec.include == "listed":
        return Selection(spec, tuple(remaining))
    timed = [c for c in remaining if _is_time(frame[c])]
    if timed:
        raise DataError(
            f"features.include remaining: columns {timed} hold dates or durations, which can be "
            "neither passed through nor one-hot encoded; list them in features.exclude"
        )
    numeric = [c for c in remaining if ptypes.is_numeric_dtype(frame[c].dtype)]
    other = [c for c in remaining if c not in numeric]
    one_hot = [OneHotSpec(type="one_hot", columns=other)] if other else []
    chosen = spec.model_copy(update={
        "include": "listed",
        "transforms": [*spec.transforms, *one_hot],
        "passthrough": [*spec.passthrough, *numeric],
    })
    if not chosen.transforms and not chosen.passthrough:
        raise DataError(
            "features.include remaining: the data has no column besides the target, the time "
            f"column and features.exclude ({', '.join(map(str, frame.columns))})"
        )
    return Selection(chosen, ())


def _is_time(series: pd.Series) -> bool:
    dtype = series.dtype
    return bool(ptypes.is_datetime64_any_dtype(dtype) or ptypes.is_timedelta64_dtype(dtype))
