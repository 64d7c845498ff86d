"""Built-in transforms: their math against numpy, their guards and their dict round trip."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import trainforge.features as features
from trainforge.errors import DataError, SpecError, TrainforgeError
from trainforge.features import Impute, MinMax, OneHot, Standardize, Transform

TRAIN = pd.DataFrame(
    {
        "amount": [10.0, 20.0, np.nan, 40.0, 80.0],
        "hour": [1, 5, 5, 9, 23],
        "city": ["paris", "rome", "paris", None, "oslo"],
    }
)
TEST = pd.DataFrame(
    {
        "amount": [15.0, np.nan, 100.0],
        "hour": [0, 5, 30],
        "city": ["rome", "tokyo", None],
    }
)


def _fitted(transform: Transform, frame: pd.DataFrame = TRAIN) -> Transform:
    transform.fit(frame)
    return transform


def test_public_api() -> None:
    assert features.__all__ == [
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


def test_standardize_uses_train_mean_and_population_std() -> None:
    out = _fitted(Standardize(["amount", "hour"])).transform(TEST)

    amount = np.array([10.0, 20.0, 40.0, 80.0])
    hour = TRAIN["hour"].to_numpy(dtype=float)
    np.testing.assert_array_equal(out["amount"], (TEST["amount"] - amount.mean()) / amount.std())
    np.testing.assert_array_equal(out["hour"], (TEST["hour"] - hour.mean()) / hour.std())
    assert np.isnan(out["amount"][1])
    assert list(out.columns) == ["amount", "hour"]


def test_standardize_constant_column_divides_by_one() -> None:
    out = _fitted(Standardize(["c"]), pd.DataFrame({"c": [3.0, 3.0]})).transform(
        pd.DataFrame({"c": [3.0, 5.0]})
    )

    assert out["c"].tolist() == [0.0, 2.0]


def test_min_max_maps_the_train_range_to_unit_interval() -> None:
    transform = _fitted(MinMax(["amount", "hour"]))

    train_out = transform.transform(TRAIN)
    test_out = transform.transform(TEST)

    np.testing.assert_array_equal(train_out["amount"], (TRAIN["amount"] - 10.0) / 70.0)
    np.testing.assert_array_equal(test_out["hour"], (TEST["hour"] - 1) / 22)
    assert np.nanmin(train_out.to_numpy()) == 0.0 and np.nanmax(train_out.to_numpy()) == 1.0


def test_min_max_constant_column_maps_to_zero() -> None:
    out = _fitted(MinMax(["c"]), pd.DataFrame({"c": [7, 7, 7]})).transform(pd.DataFrame({"c": [7]}))

    assert out["c"].tolist() == [0.0]


def test_one_hot_keeps_frequent_categories_and_buckets_the_rest() -> None:
    transform = _fitted(OneHot(["city"]))

    out = transform.transform(TEST)

    assert transform.output_names() == ["city=paris", "city=oslo", "city=rome", "city=__other__"]
    assert out.to_numpy().tolist() == [[0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 1]]


def test_one_hot_max_categories_and_min_frequency() -> None:
    train = pd.DataFrame({"c": ["b", "a", "c", "c", "a", "b", "d", "c"]})

    top_two = _fitted(OneHot(["c"], max_categories=2), train)
    frequent = _fitted(OneHot(["c"], min_frequency=2), train)

    assert top_two.output_names() == ["c=c", "c=a", "c=__other__"]
    assert frequent.output_names() == ["c=c", "c=a", "c=b", "c=__other__"]
    encoded = top_two.transform(pd.DataFrame({"c": ["b", "d", "a"]}))
    assert encoded["c=__other__"].tolist() == [1.0, 1.0, 0.0]


def test_one_hot_numbers_match_by_value() -> None:
    transform = _fitted(OneHot(["hour"]))

    out = transform.transform(pd.DataFrame({"hour": [5.0, np.nan, 23.0]}))

    assert transform.output_names()[0] == "hour=5"
    assert out["hour=5"].tolist() == [1.0, 0.0, 0.0]
    assert out["hour=23"].tolist() == [0.0, 0.0, 1.0]
    assert out["hour=__other__"].tolist() == [0.0, 1.0, 0.0]


OBSERVED = np.array([10.0, 20.0, 40.0, 80.0])


@pytest.mark.parametrize(
    ("strategy", "expected"),
    # every value is seen once, so most_frequent takes the alphabetically first text, "10.0"
    [("mean", np.mean(OBSERVED)), ("median", np.median(OBSERVED)), ("most_frequent", 10.0)],
)
def test_impute_numeric_strategies(strategy: str, expected: float) -> None:
    out = _fitted(Impute(["amount"], strategy=strategy)).transform(TEST)

    assert out["amount"].tolist() == [15.0, expected, 100.0]


def test_impute_text_columns() -> None:
    most = _fitted(Impute(["city"], strategy="most_frequent")).transform(TEST)
    constant = _fitted(Impute(["city"], strategy="constant", fill_value="unknown")).transform(TEST)

    assert most["city"].tolist() == ["rome", "tokyo", "paris"]
    assert constant["city"].tolist() == ["rome", "tokyo", "unknown"]


def test_impute_nullable_int_column() -> None:
    frame = pd.DataFrame({"n": pd.array([1, None, 4], dtype="Int64")})

    out = _fitted(Impute(["n"], strategy="mean"), frame).transform(frame)

    assert out["n"].tolist() == [1.0, 2.5, 4.0]


def test_impute_constant_needs_a_fill_value_of_the_column_kind() -> None:
    with pytest.raises(SpecError, match="strategy 'constant' needs fill_value"):
        Impute(["amount"], strategy="constant")
    with pytest.raises(DataError, match="fill_value 'x' does not fit column 'amount'"):
        Impute(["amount"], strategy="constant", fill_value="x").fit(TRAIN)


def test_numeric_transforms_reject_text_columns() -> None:
    with pytest.raises(DataError, match=r"standardize transform: column 'city' holds .*numbers"):
        Standardize(["city"]).fit(TRAIN)
    with pytest.raises(DataError, match="impute transform: column 'city' holds"):
        Impute(["city"], strategy="median").fit(TRAIN)


def test_fit_on_a_column_without_values_is_an_error() -> None:
    with pytest.raises(DataError, match="column 'x' has no finite values to fit on"):
        MinMax(["x"]).fit(pd.DataFrame({"x": [np.nan, np.nan]}))


@pytest.mark.parametrize("transform", [Standardize(["amount"]), OneHot(["city"])])
def test_transform_before_fit_is_an_error(transform: Transform) -> None:
    with pytest.raises(TrainforgeError, match=r"transform\(\) called before fit\(\)"):
        transform.transform(TRAIN)
    with pytest.raises(TrainforgeError, match=r"output_names\(\) called before fit\(\)"):
        transform.output_names()


def test_missing_input_column_is_named() -> None:
    transform = _fitted(Standardize(["amount"]))

    with pytest.raises(DataError, match="standardize transform: column 'amount' not found"):
        transform.transform(TEST.drop(columns="amount"))
    with pytest.raises(DataError, match="column 'nope' not found"):
        OneHot(["nope"]).fit(TRAIN)


def test_output_keeps_the_input_index() -> None:
    frame = TEST.set_index(pd.Index([7, 8, 9]))

    assert _fitted(OneHot(["city"])).transform(frame).index.tolist() == [7, 8, 9]


@pytest.mark.parametrize(
    "transform",
    [
        Standardize(["amount", "hour"]),
        MinMax(["amount"]),
        OneHot(["city", "hour"], max_categories=2),
        Impute(["amount"], strategy="mean"),
        Impute(["city"], strategy="constant", fill_value="?"),
    ],
)
def test_dict_round_trip_transforms_identically(transform: Transform) -> None:
    data = _fitted(transform).to_dict()

    restored = type(transform).from_dict(json.loads(json.dumps(data)))

    assert restored.to_dict() == data
    pd.testing.assert_frame_equal(restored.transform(TEST), transform.transform(TEST))


def test_unfitted_dict_has_no_state_and_kind_must_match() -> None:
    data = OneHot(["city"], max_categories=3).to_dict()

    assert data == {
        "kind": "one_hot",
        "columns": ["city"],
        "params": {"max_categories": 3, "min_frequency": 1},
        "state": None,
    }
    assert not OneHot.from_dict(data).is_fitted
    with pytest.raises(TrainforgeError, match="expected kind 'standardize', got 'one_hot'"):
        Standardize.from_dict(data)
