"""FeaturePipeline: ordered transforms fitted on train, float32 output, JSON save / load."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trainforge.config import FeaturesSpec
from trainforge.errors import ArtifactError, DataError, SpecError, TrainforgeError
from trainforge.features import FeaturePipeline, Impute, Standardize

SPEC = FeaturesSpec.model_validate(
    {
        "transforms": [
            {"type": "impute", "columns": ["amount"], "strategy": "median"},
            {"type": "standardize", "columns": ["amount", "hour"]},
            {"type": "one_hot", "columns": ["city"], "max_categories": 2},
            {"type": "min_max", "columns": ["age"]},
        ],
        "passthrough": ["is_new"],
    }
)


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    amount = rng.lognormal(3, 1, n)
    amount[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame(
        {
            "amount": amount,
            "hour": rng.integers(0, 24, n),
            "city": rng.choice(["paris", "rome", "oslo", "lima"], n, p=[0.5, 0.3, 0.15, 0.05]),
            "age": rng.uniform(18, 90, n),
            "is_new": rng.integers(0, 2, n).astype(bool),
            "unused": ["x"] * n,
        }
    )


TRAIN, TEST = _frame(500, 0), _frame(200, 1)


def _fitted() -> FeaturePipeline:
    return FeaturePipeline.from_spec(SPEC).fit(TRAIN)


def test_fit_returns_the_pipeline_and_names_features_in_first_seen_order() -> None:
    pipeline = FeaturePipeline.from_spec(SPEC)

    assert pipeline.fit(TRAIN) is pipeline
    assert pipeline.feature_names == [
        "amount",
        "hour",
        "city=paris",
        "city=rome",
        "city=__other__",
        "age",
        "is_new",
    ]


def test_transform_is_float32_rows_by_features() -> None:
    matrix = _fitted().transform(TEST)

    assert matrix.dtype == np.float32
    assert matrix.shape == (200, 7)


def test_test_rows_use_train_statistics() -> None:
    matrix = _fitted().transform(TEST)

    train_amount = TRAIN["amount"].dropna().to_numpy()
    imputed = TRAIN["amount"].fillna(np.median(train_amount)).to_numpy()
    expected_amount = TEST["amount"].fillna(np.median(train_amount))
    expected_amount = (expected_amount - imputed.mean()) / imputed.std()
    age = TRAIN["age"].to_numpy()
    expected_age = (TEST["age"] - age.min()) / (age.max() - age.min())
    np.testing.assert_array_equal(matrix[:, 0], expected_amount.to_numpy(dtype=np.float32))
    np.testing.assert_array_equal(matrix[:, 5], expected_age.to_numpy(dtype=np.float32))
    assert matrix[:, 6].tolist() == TEST["is_new"].astype(float).tolist()
    assert matrix[:, 2:5].sum(axis=1).tolist() == [1.0] * 200


def test_fitting_on_other_rows_changes_the_state() -> None:
    other = FeaturePipeline.from_spec(SPEC).fit(TEST)

    assert other.content_hash != _fitted().content_hash
    assert not np.array_equal(other.transform(TEST), _fitted().transform(TEST))


def test_each_transform_fits_on_the_previous_output() -> None:
    pipeline = FeaturePipeline(
        [Impute(["x"], strategy="constant", fill_value=10.0), Standardize(["x"])]
    ).fit(pd.DataFrame({"x": [0.0, np.nan]}))

    assert pipeline.transform(pd.DataFrame({"x": [np.nan, 0.0]})).tolist() == [[1.0], [-1.0]]


def test_json_is_canonical_and_versioned() -> None:
    text = _fitted().to_json()
    data = json.loads(text)

    assert data["format_version"] == 1
    assert text == json.dumps(data, sort_keys=True, separators=(",", ":"))
    assert [t["kind"] for t in data["transforms"]] == [
        "impute",
        "standardize",
        "one_hot",
        "min_max",
    ]


def test_json_round_trip_transforms_bit_for_bit() -> None:
    pipeline = _fitted()

    restored = FeaturePipeline.from_json(pipeline.to_json())

    assert restored.to_json() == pipeline.to_json()
    assert restored.feature_names == pipeline.feature_names
    assert restored.transform(TEST).tobytes() == pipeline.transform(TEST).tobytes()


def test_save_and_load_are_atomic_and_identical(tmp_path: Path) -> None:
    path = tmp_path / "features.json"
    path.write_text("old")
    pipeline = _fitted()

    pipeline.save(path)
    loaded = FeaturePipeline.load(path)

    assert [p.name for p in tmp_path.iterdir()] == ["features.json"]
    assert loaded.transform(TEST).tobytes() == pipeline.transform(TEST).tobytes()
    assert loaded.content_hash == pipeline.content_hash


def test_a_saved_pipeline_gets_the_mode_the_umask_gives_any_file(tmp_path: Path) -> None:
    before = os.umask(0o027)
    try:
        _fitted().save(tmp_path / "features.json")
        (tmp_path / "other.txt").write_text("any file the user creates")
    finally:
        os.umask(before)

    mode = stat.S_IMODE((tmp_path / "features.json").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "other.txt").stat().st_mode) == 0o640


def test_failed_save_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "features.json"
    path.write_text("old")

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("trainforge.features._pipeline.os.replace", fail)
    with pytest.raises(OSError, match="disk full"):
        _fitted().save(path)

    assert [p.name for p in tmp_path.iterdir()] == ["features.json"]
    assert path.read_text() == "old"


def test_content_hash_is_stable_and_names_the_json() -> None:
    first, second = _fitted(), _fitted()

    assert first.content_hash == second.content_hash
    assert first.content_hash == hashlib.sha256(first.to_json().encode()).hexdigest()


def test_non_finite_output_names_the_column_and_suggests_impute() -> None:
    spec = FeaturesSpec.model_validate(
        {"transforms": [{"type": "standardize", "columns": ["amount", "age"]}]}
    )
    pipeline = FeaturePipeline.from_spec(spec).fit(TRAIN)
    test = TEST.assign(age=TEST["age"].where(TEST.index != 3, np.inf))
    missing = int(TEST["amount"].isna().sum())

    with pytest.raises(
        DataError,
        match=rf"'amount' \({missing} of 200 rows\), 'age' \(1 of 200 "
        r"rows\) \(first: row \d+, .*\); "
        "add an impute transform",
    ):
        pipeline.transform(test)


def test_non_finite_output_names_the_first_rows_by_locate() -> None:
    spec = FeaturesSpec.model_validate({"passthrough": ["age"]})
    pipeline = FeaturePipeline.from_spec(spec).fit(TRAIN)
    test = TEST.assign(age=TEST["age"].where(~TEST.index.isin([3, 9]), np.nan))

    with pytest.raises(DataError, match=r"'age' \(2 of 200 rows\) \(first: row 4, row 10\)"):
        pipeline.transform(test)
    with pytest.raises(DataError, match=r"\(first: f.csv line 5, f.csv line 11\)"):
        pipeline.transform(test, lambda row: f"f.csv line {row + 2}")


def test_text_passthrough_is_an_error() -> None:
    pipeline = FeaturePipeline([Standardize(["age"])], passthrough=["unused"]).fit(TRAIN)

    with pytest.raises(DataError, match=r"feature column 'unused' holds .* expected numbers"):
        pipeline.transform(TEST)


def test_a_column_cannot_be_both_transformed_and_passed_through() -> None:
    spec = FeaturesSpec.model_validate(
        {"transforms": [{"type": "min_max", "columns": ["age"]}], "passthrough": ["age"]}
    )

    with pytest.raises(SpecError, match=r"features.passthrough: \['age'\] also feed the min_max"):
        FeaturePipeline.from_spec(spec)


def test_spec_problems_name_the_transform() -> None:
    spec = FeaturesSpec.model_validate(
        {
            "transforms": [
                {"type": "standardize", "columns": ["age"]},
                {"type": "impute", "columns": ["city"], "strategy": "constant"},
            ]
        }
    )

    with pytest.raises(SpecError, match=r"features\.transforms\.1: impute .*needs fill_value"):
        FeaturePipeline.from_spec(spec)


def test_transform_before_fit_is_an_error() -> None:
    pipeline = FeaturePipeline.from_spec(SPEC)

    assert not pipeline.is_fitted
    with pytest.raises(TrainforgeError, match=r"called before fit\(\)"):
        pipeline.transform(TEST)


def test_missing_input_column_is_named() -> None:
    with pytest.raises(DataError, match="column 'hour' not found"):
        _fitted().transform(TEST.drop(columns="hour"))


def test_unknown_transform_kind_is_named() -> None:
    data = json.loads(_fitted().to_json())
    data["transforms"][1]["kind"] = "log_scale"

    with pytest.raises(TrainforgeError, match=r"transforms\.1: unknown transform kind 'log_scale'"):
        FeaturePipeline.from_json(json.dumps(data))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "malformed"),
        ('{"format_version": 99, "transforms": [], "passthrough": []}', "format_version 1, got 99"),
        ('{"format_version": 1}', "expected lists at transforms and passthrough"),
        (
            '{"format_version": 1, "transforms": [{"kind": "min_max"}], "passthrough": []}',
            r"transforms\.0 \(min_max\): malformed",
        ),
    ],
)
def test_broken_json_is_an_artifact_error(text: str, message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        FeaturePipeline.from_json(text)


def test_load_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "features.json"
    with pytest.raises(ArtifactError, match=r"features\.json: cannot read feature pipeline"):
        FeaturePipeline.load(path)
    path.write_text("[]")
    with pytest.raises(ArtifactError, match=r"features\.json: .*format_version"):
        FeaturePipeline.load(path)
