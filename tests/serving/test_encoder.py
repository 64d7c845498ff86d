"""The served encoder builds the same bytes as `FeaturePipeline.transform`, for every transform
kind, nulls, numbers as categories and boolean passthrough; `check_served_features` names the
first row and feature where a changed transform makes them differ."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainforge.config import FeaturesSpec
from trainforge.errors import FeatureMismatch
from trainforge.features import FeaturePipeline, ServedEncoder, Standardize, row_check_sample
from trainforge.serving import FeatureError, check_served_features, compile_encoder

FLOAT32_MAX = float(np.finfo(np.float32).max)
SPEC = FeaturesSpec.model_validate({
    "transforms": [
        {"type": "impute", "columns": ["amount"], "strategy": "median"},
        {"type": "impute", "columns": ["city"], "strategy": "most_frequent"},
        {"type": "impute", "columns": ["hour"], "strategy": "most_frequent"},
        {"type": "standardize", "columns": ["amount", "age"]},
        {"type": "one_hot", "columns": ["city", "hour"], "max_categories": 3},
        {"type": "min_max", "columns": ["score"]},
    ],
    "passthrough": ["is_new"],
})


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    amount = rng.lognormal(3, 1, n)
    amount[rng.random(n) < 0.1] = np.nan
    hour = rng.integers(0, 24, n).astype(float)
    hour[rng.random(n) < 0.1] = np.nan  # a float column: categories 3 must match 3.0
    city = rng.choice(["paris", "rome", "oslo", "lima"], n).astype(object)
    city[rng.random(n) < 0.1] = None
    return pd.DataFrame({
        "amount": amount, "city": city, "hour": hour, "age": rng.integers(18, 90, n),
        "score": rng.uniform(-5, 5, n), "is_new": rng.integers(0, 2, n).astype(bool),
        "unused": ["x"] * n,
    })


@pytest.fixture(scope="module")
def pipeline() -> FeaturePipeline:
    return FeaturePipeline.from_spec(SPEC).fit(_frame(400, 0))


def test_the_served_matrix_is_byte_identical_to_the_training_transform(pipeline):
    test = _frame(300, 1)
    served = compile_encoder(pipeline).encode(test.to_dict(orient="records"))
    expected = pipeline.transform(test)
    assert served.dtype == np.float32 and served.tobytes() == expected.tobytes()


def test_single_json_records_encode_as_their_rows_do(pipeline):
    test = _frame(20, 2)
    encoder = compile_encoder(pipeline)
    expected = pipeline.transform(test)
    for row, record in enumerate(test.to_dict(orient="records")):
        as_json = {k: None if isinstance(v, float) and np.isnan(v) else v
                   for k, v in record.items()}
        assert encoder.encode([as_json]).tobytes() == expected[row:row + 1].tobytes()


def test_the_encoder_reads_only_the_pipeline_input_columns(pipeline):
    encoder = compile_encoder(pipeline)
    assert set(encoder.inputs) == {"amount", "city", "hour", "age", "score", "is_new"}
    assert encoder.numeric == {"amount", "hour", "age", "score", "is_new"}
    assert list(encoder.feature_names) == pipeline.feature_names


def test_a_null_left_unfilled_names_the_record_and_feature(pipeline):
    records = _frame(3, 3).to_dict(orient="records")
    records[2]["age"] = None
    with pytest.raises(FeatureError, match=r"record 2: field 'age': is null and no impute "
                                           r"transform fills it") as caught:
        compile_encoder(pipeline).encode(records)
    assert (caught.value.record, caught.value.field) == (2, "age")


def test_the_golden_check_passes_for_the_pipeline_as_fitted(pipeline):
    check_served_features(pipeline, _frame(300, 4), "run-1")


def test_the_golden_check_names_the_first_differing_row_and_feature(pipeline, monkeypatch):
    golden = _frame(300, 5)
    real = Standardize._transform

    def changed(self, frame):  # the training transform changed: shifted from row 8 on
        out = real(self, frame)
        return out + 1e-3 * (out.index >= 7)[:, None]

    monkeypatch.setattr(Standardize, "_transform", changed)
    with pytest.raises(FeatureMismatch, match=r"run run-1: the served feature encoder differs "
                                              r"from the training transform at golden row 8, "
                                              r"feature 'amount'"):
        check_served_features(pipeline, golden, "run-1")


def _one_rare_null(n: int, row: int) -> pd.DataFrame:
    golden = _frame(n, 7)
    filled = golden.assign(amount=golden["amount"].fillna(1.0), city=golden["city"].fillna("rome"),
                           hour=golden["hour"].fillna(3.0))
    filled.loc[row, "amount"] = np.nan
    return filled


def test_the_record_by_record_sample_holds_every_null_pattern_and_category_first(pipeline):
    golden = _one_rare_null(5_000, 3_333)
    encoder = compile_encoder(pipeline)

    rows = row_check_sample(golden, encoder, limit=12)

    cities = {golden["city"].iloc[i] for i in rows}
    assert 3_333 in rows and cities == {"paris", "rome", "oslo", "lima"}
    assert len(rows) == 12 and list(rows) == sorted(set(rows)) and rows[-1] == 4_999
    assert list(row_check_sample(golden.head(5), encoder)) == [0, 1, 2, 3, 4]


def test_a_record_by_record_difference_on_a_rare_row_names_that_golden_row(pipeline,
                                                                           monkeypatch):
    golden = _one_rare_null(20_000, 13_579)  # the sample is a tenth of it: row 13,580 by its nulls
    real = ServedEncoder.encode_rows

    def changed(self, records):  # the per-record path drifts on a null amount only
        out = real(self, records)
        return out + np.float32(1e-3) * np.isnan([[r["amount"] for r in records]]).T

    monkeypatch.setattr(ServedEncoder, "encode_rows", changed)
    with pytest.raises(FeatureMismatch, match=r"run run-1: the served feature encoder \(record by "
                                              r"record\) differs from the training transform at "
                                              r"golden row 13580, feature "):
        check_served_features(pipeline, golden, "run-1")


def test_an_unknown_transform_kind_fails_the_golden_check(pipeline, monkeypatch):
    to_json = pipeline.to_json().replace('"kind":"min_max"', '"kind":"log1p"')
    monkeypatch.setattr(pipeline, "to_json", lambda: to_json)
    with pytest.raises(FeatureMismatch, match=r"no served encoder for transform kind\(s\) "
                                              r"\['log1p'\]"):
        check_served_features(pipeline, _frame(10, 6), "run-1")


@pytest.mark.filterwarnings("error")
def test_values_at_the_limits_encode_finite_and_past_a_scaled_limit_overflow():
    frame = pd.DataFrame({"x": np.linspace(0.0, 0.01, 50), "z": np.linspace(0.0, 0.01, 50),
                          "y": np.linspace(-3.0, 3.0, 50)})
    spec = FeaturesSpec.model_validate({"transforms": [
        {"type": "standardize", "columns": ["x", "z"]},  # std < 1: the scaled value binds
        {"type": "min_max", "columns": ["z"]},            # a chain: each step stays in range
    ], "passthrough": ["y"]})
    encoder = compile_encoder(FeaturePipeline.from_spec(spec).fit(frame))
    assert encoder.limits["y"] == (-FLOAT32_MAX, FLOAT32_MAX)
    for name in ("x", "z"):
        low, high = encoder.limits[name]
        assert -FLOAT32_MAX < low < 0 < high < FLOAT32_MAX
    at_limits = [{"x": encoder.limits["x"][i], "z": encoder.limits["z"][i],
                  "y": encoder.limits["y"][i]} for i in (0, 1)]
    for encode in (encoder.encode_rows, encoder.encode_columns):
        assert np.isfinite(encode(at_limits)).all()
    past = [{"x": encoder.limits["x"][1] * (1 + 1e-6), "z": 0.0, "y": 0.0}]
    for encode in (encoder.encode_rows, encoder.encode_columns):
        with pytest.raises(FeatureError, match=r"record 0: field 'x': is beyond float32's range"):
            encode(past)
