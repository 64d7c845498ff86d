"""select_features: `features.include` (listed | remaining) written out as a plain spec, and the
pipeline built from it saved, loaded and applied as any other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trainforge.config import FeaturesSpec
from trainforge.errors import DataError, SpecError
from trainforge.features import FeaturePipeline, select_features


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": [f"tx-{seed}-{i}" for i in range(n)],
            "amount": rng.lognormal(3, 1, n),
            "city": rng.choice(["paris", "rome", "oslo"], n),
            "ts": pd.date_range("2024-01-01", periods=n, freq="h"),
            "is_new": rng.integers(0, 2, n).astype(bool),
            "hour": rng.integers(0, 24, n),
            "device": rng.choice(["web", "pos"], n),
            "label": rng.integers(0, 2, n),
        }
    )


TRAIN, SERVE = _frame(300, 0), _frame(50, 1)
RESERVED = ["label", "ts"]


def _spec(**fields: object) -> FeaturesSpec:
    return FeaturesSpec.model_validate(fields)


def test_listed_uses_only_named_columns_and_reports_the_others_in_frame_order() -> None:
    spec = _spec(transforms=[{"type": "standardize", "columns": ["amount"]}],
                 exclude=["id"])

    selection = select_features(spec, TRAIN, RESERVED)

    assert selection.spec == spec
    assert selection.unused == ("city", "is_new", "hour", "device")


def test_listed_with_every_column_named_or_excluded_leaves_none_unused() -> None:
    spec = _spec(transforms=[{"type": "one_hot", "columns": ["city", "device"]}],
                 passthrough=["amount", "is_new", "hour"], exclude=["id"])

    assert select_features(spec, TRAIN, RESERVED).unused == ()


def test_remaining_passes_numbers_through_and_one_hot_encodes_the_rest() -> None:
    spec = _spec(include="remaining", exclude=["id"],
                 transforms=[{"type": "standardize", "columns": ["amount"]}])

    selection = select_features(spec, TRAIN, RESERVED)

    chosen = selection.spec
    assert selection.unused == ()
    assert chosen.include == "listed" and chosen.exclude == ["id"]
    assert [t.model_dump() for t in chosen.transforms] == [
        {"type": "standardize", "columns": ["amount"]},
        {"type": "one_hot", "columns": ["city", "device"], "max_categories": 20,
         "min_frequency": 1},
    ]
    assert chosen.passthrough == ["is_new", "hour"]


def test_remaining_keeps_listed_passthrough_first() -> None:
    spec = _spec(include="remaining", passthrough=["hour"], exclude=["id", "city", "device"])

    chosen = select_features(spec, TRAIN, RESERVED).spec

    assert chosen.transforms == [] and chosen.passthrough == ["hour", "amount", "is_new"]


def test_remaining_refuses_a_date_column_naming_it_and_exclude() -> None:
    spec = _spec(include="remaining", exclude=["id"])

    with pytest.raises(DataError, match=r"columns \['ts'\] hold dates or durations.*"
                                        r"list them in features.exclude"):
        select_features(spec, TRAIN, ["label"])


def test_remaining_with_no_column_left_is_an_error() -> None:
    spec = _spec(include="remaining", exclude=["id", "amount", "city", "is_new", "hour",
                                               "device"])

    with pytest.raises(DataError, match="the data has no column besides the target"):
        select_features(spec, TRAIN, RESERVED)


def test_a_pipeline_is_not_built_from_an_unresolved_remaining_spec() -> None:
    with pytest.raises(SpecError, match="include: remaining needs the data's columns"):
        FeaturePipeline.from_spec(_spec(include="remaining"))


def test_a_remaining_pipeline_saves_loads_and_serves_identically(tmp_path: Path) -> None:
    spec = _spec(include="remaining", exclude=["id"])
    pipeline = FeaturePipeline.from_spec(select_features(spec, TRAIN, RESERVED).spec)
    pipeline.fit(TRAIN)
    pipeline.save(tmp_path / "pipeline.json")

    loaded = FeaturePipeline.load(tmp_path / "pipeline.json")
    serving = SERVE.drop(columns=["label", "id", "ts"])[["device", "hour", "city", "is_new",
                                                          "amount"]]

    names = pipeline.feature_names
    assert loaded.feature_names == names
    assert sorted(names[:4]) == ["city=__other__", "city=oslo", "city=paris", "city=rome"]
    assert sorted(names[4:7]) == ["device=__other__", "device=pos", "device=web"]
    assert names[7:] == ["amount", "is_new", "hour"]
    assert loaded.content_hash == pipeline.content_hash
    assert np.array_equal(loaded.transform(serving), pipeline.transform(SERVE))


def test_a_passthrough_only_pipeline_needs_no_transform() -> None:
    pipeline = FeaturePipeline.from_spec(_spec(passthrough=["amount", "hour"])).fit(TRAIN)

    matrix = pipeline.transform(SERVE)

    assert matrix.dtype == np.float32 and matrix.shape == (50, 2)
    assert FeaturePipeline.from_json(pipeline.to_json()).feature_names == ["amount", "hour"]
