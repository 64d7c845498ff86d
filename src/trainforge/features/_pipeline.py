"""FeaturePipeline: an ordered list of transforms, fitted on train, saved and loaded as JSON.

Rules:
- Transforms run in order, each on the columns as the previous ones left them (impute then
  standardize the same column works); `fit` fits each on the previous ones' output.
- Features are the transforms' outputs in first-seen order (a transform's outputs take the
  place of its first input already among the features, else go at the end), then `passthrough`.
- `transform` returns float32 (rows, features); a NaN or inf left in it is a DataError naming
  the first such rows by `locate(position)` (`row <n>`, from 1, without).
- The JSON form is canonical (sorted keys, compact), so `content_hash` names the fitted state,
  and a loaded pipeline transforms bit-for-bit as the saved one did. Nothing is unpickled.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from trainforge.config import FeaturesSpec
from trainforge.errors import ArtifactError, DataError, SpecError
from trainforge.features._base import Transform
from trainforge.features._impute import Impute
from trainforge.features._onehot import OneHot
from trainforge.features._scale import MinMax, Standardize

FORMAT_VERSION = 1
_KINDS: dict[str, type[Transform]] = {t.kind: t for t in (Standardize, MinMax, OneHot, Impute)}


class FeaturePipeline:
    """Turns frames into float32 model inputs the same way at training and serving time.

    >>> spec = FeaturesSpec(transforms=[{"type": "standardize", "columns": ["amount"]}])
    >>> pipeline = FeaturePipeline.from_spec(spec).fit(pd.DataFrame({"amount": [1.0, 3.0]}))
    >>> pipeline.transform(pd.DataFrame({"amount": [2.0]})).tolist()
    [[0.0]]
    """

    def __init__(self, transforms: Sequence[Transform], passthrough: Sequence[str] = ()) -> None:
        self.transforms = list(transforms)
        self.passthrough = list(passthrough)
        for transform in self.transforms:
            both = [c for c in transform.columns if c in self.passthrough]
            if both:
                raise SpecError(
                    [
                        f"features.passthrough: {both} also feed the {transform.kind} "
                        "transform; list a column in one place"
                    ]
                )

    @classmethod
    def from_spec(cls, spec: FeaturesSpec) -> FeaturePipeline:
        """Build the (unfitted) pipeline a `features:` spec section describes.

        A section with `include: remaining` names its columns only with the data's: pass
        `select_features(spec, frame, reserved).spec`, else SpecError.
        """
        if spec.include == "remaining":
            raise SpecError([
                "features.include: remaining needs the data's columns; build the pipeline "
                "from select_features(spec, training_frame, reserved_columns).spec"
            ])
        transforms = []
        for index, item in enumerate(spec.transforms):
            try:
                transforms.append(_KINDS[item.type](**item.model_dump(exclude={"type"})))
            except SpecError as exc:
                problems = [f"features.transforms.{index}: {p}" for p in exc.problems]
                raise SpecError(problems) from None
        return cls(transforms, spec.passthrough)

    @property
    def is_fitted(self) -> bool:
        return all(t.is_fitted for t in self.transforms)

    def fit(self, frame: pd.DataFrame) -> FeaturePipeline:
        """Fit every transform on `frame` (the training split) as left by the ones before it."""
        frame = frame.reset_index(drop=True)
        for transform in self.transforms:
            transform.fit(frame)
            frame = _apply(frame, transform)
        return self

    def transform(
        self, frame: pd.DataFrame, locate: Callable[[int], str] | None = None
    ) -> np.ndarray:
        """The float32 feature matrix of `frame`, columns in `feature_names` order; `locate`
        names a row position of `frame` in errors (its file and line)."""
        frame = self.transform_frame(frame)
        names = self.feature_names
        _require_numeric(frame, names)
        matrix = frame[names].to_numpy(dtype=np.float64, na_value=np.nan).astype(np.float32)
        _require_finite(matrix, names, locate or (lambda row: f"row {row + 1}"))
        return matrix

    def transform_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """`frame` (index reset) as the transforms leave it: their inputs replaced by their
        outputs, other columns kept."""
        frame = frame.reset_index(drop=True)
        for transform in self.transforms:
            frame = _apply(frame, transform)
        return frame

    @property
    def feature_names(self) -> list[str]:
        names: list[str] = []
        for transform in self.transforms:
            seen = [names.index(c) for c in transform.columns if c in names]
            names = [n for n in names if n not in transform.columns]
            at = min(seen) if seen else len(names)
            names[at:at] = transform.output_names()
        return names + self.passthrough

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, compact separators, no NaN."""
        data = {
            "format_version": FORMAT_VERSION,
            "transforms": [t.to_dict() for t in self.transforms],
            "passthrough": self.passthrough,
        }
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> FeaturePipeline:
        """Rebuild a pipeline from `to_json` output; ArtifactError says what is wrong with it."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ArtifactError(f"feature pipeline JSON is malformed: {exc}") from None
        if not isinstance(data, dict) or data.get("format_version") != FORMAT_VERSION:
            found = data.get("format_version") if isinstance(data, dict) else None
            raise ArtifactError(
                f"feature pipeline JSON: expected format_version {FORMAT_VERSION}, got {found!r}"
            )
        items, passthrough = data.get("transforms"), data.get("passthrough")
        if not isinstance(items, list) or not isinstance(passthrough, list):
            raise ArtifactError(
                "feature pipeline JSON: expected lists at transforms and passthrough"
            )
        return cls([_transform_from_dict(i, item) for i, item in enumerate(items)], passthrough)

    def save(self, path: str | Path) -> None:
        """Write `to_json()` atomically: a temp file in the same folder, fsync, then rename.
        The file gets the mode any file the user creates gets (0666 less the umask), not
        `mkstemp`'s 0600."""
        path = Path(path)
        temp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(self.to_json())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise

    @classmethod
    def load(cls, path: str | Path) -> FeaturePipeline:
        """Read a pipeline written by `save`."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ArtifactError(f"{path}: cannot read feature pipeline: {exc.strerror}") from None
        try:
            return cls.from_json(text)
        except ArtifactError as exc:
            raise ArtifactError(f"{path}: {exc}") from None

    @property
    def content_hash(self) -> str:
        """sha256 of `to_json()`: equal for pipelines with equal transforms and fitted state."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()


def _apply(frame: pd.DataFrame, transform: Transform) -> pd.DataFrame:
    """`frame` with the transform's inputs replaced by its outputs."""
    out = transform.transform(frame)
    return pd.concat([frame.drop(columns=transform.columns), out], axis=1)


def _transform_from_dict(index: int, item: Any) -> Transform:
    kind = item.get("kind") if isinstance(item, dict) else None
    if kind not in _KINDS:
        raise ArtifactError(
            f"feature pipeline JSON: transforms.{index}: unknown transform kind "
            f"{kind!r}; known kinds: {', '.join(sorted(_KINDS))}"
        )
    try:
        return _KINDS[kind].from_dict(item)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ArtifactError(
            f"feature pipeline JSON: transforms.{index} ({kind}): malformed: {exc!r}"
        ) from None


def _require_numeric(frame: pd.DataFrame, names: list[str]) -> None:
    for name in names:
        if name not in frame.columns:
            raise DataError(f"feature column {name!r} not found in the frame")
        dtype = frame[name].dtype
        if not (ptypes.is_numeric_dtype(dtype) or ptypes.is_bool_dtype(dtype)):
            raise DataError(
                f"feature column {name!r} holds {dtype} values; expected numbers "
                "(one-hot encode it, or leave it out of passthrough)"
            )


def _require_finite(matrix: np.ndarray, names: list[str], where: Callable[[int], str]) -> None:
    broken = ~np.isfinite(matrix)
    bad = broken.sum(axis=0)
    if bad.any():
        rows = len(matrix)
        found = ", ".join(f"{names[i]!r} ({bad[i]} of {rows} rows)" for i in np.flatnonzero(bad))
        first = ", ".join(where(int(i)) for i in np.flatnonzero(broken.any(axis=1))[:5])
        raise DataError(
            f"features hold NaN or inf values after the transforms: {found} (first: {first}); "
            "add an impute transform for these columns before the others"
        )
