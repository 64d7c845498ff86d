"""The value store: each codec gives back what it was given; content-addressed once; a
changed or missing object is refused naming it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from trainforge.errors import ValueStoreError
from trainforge.features import FeaturePipeline
from trainforge.orchestration import ValueStore
from trainforge.orchestration.values import codec_for
from trainforge.storage.objects import open_object_store


@pytest.fixture
def values(tmp_path: Path) -> ValueStore:
    return ValueStore(open_object_store(tmp_path / "objects"))


def test_a_frame_comes_back_with_its_dtypes_and_index(values: ValueStore) -> None:
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", None, "z"], "c": [0.5, float("nan"), 2.0],
                          "t": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-03"])},
                         index=[10, 20, 30])
    ref = values.put(frame)
    assert ref is not None and ref.codec == "parquet"
    pd.testing.assert_frame_equal(values.get(ref), frame)


def test_a_fitted_feature_pipeline_comes_back_fitted(values: ValueStore) -> None:
    from trainforge.config import FeaturesSpec

    frame = pd.DataFrame({"amount": [1.0, 2.0, 3.0], "kind": ["a", "b", "a"]})
    spec = FeaturesSpec.model_validate({"transforms": [
        {"columns": ["amount"], "type": "standardize"}, {"columns": ["kind"], "type": "one_hot"}]})
    fitted = FeaturePipeline.from_spec(spec).fit(frame)
    ref = values.put(fitted)
    assert ref is not None and ref.codec == "feature-pipeline"
    loaded = values.get(ref)
    assert loaded.content_hash == fitted.content_hash
    assert (loaded.transform(frame) == fitted.transform(frame)).all()


def test_tensors_and_state_dicts_come_back_equal(values: ValueStore) -> None:
    weights = torch.nn.Linear(3, 2).state_dict()
    ref = values.put(dict(weights))
    assert ref is not None and ref.codec == "safetensors"
    loaded = values.get(ref)
    assert set(loaded) == set(weights)
    assert all(torch.equal(loaded[name], weights[name]) for name in weights)
    single = values.put(torch.arange(6.0).reshape(2, 3))
    assert torch.equal(values.get(single), torch.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("value", [None, 3, 2.5, "text", [1, "a", None],
                                   {"a": {"b": [1.5, True]}}])
def test_plain_values_come_back_equal(values: ValueStore, value: object) -> None:
    ref = values.put(value)
    assert ref is not None and ref.codec == "json"
    assert values.get(ref) == value


@pytest.mark.parametrize("value", [(1, 2), float("nan"), {1: "a"}, object(),
                                   torch.nn.Linear(2, 2)])
def test_what_no_codec_takes_stays_in_memory(value: object) -> None:
    assert codec_for(value) is None


def test_a_value_is_stored_once_under_its_content_hash(values: ValueStore) -> None:
    first, second = values.put({"a": 1}), values.put({"a": 1})
    assert first == second
    assert list(values.objects.list("values")) == [first.key]
    assert values.put({"a": 2}).digest != first.digest


def test_a_changed_or_missing_object_is_refused_naming_it(values: ValueStore) -> None:
    ref = values.put({"a": 1})
    values.objects.write(ref.key, b'{"a":2}')
    with pytest.raises(ValueStoreError, match=rf"output 'x': .*{ref.digest}.json does not "
                       "hash to its name"):
        values.get(ref, "output 'x'")
    values.objects.delete(ref.key)
    with pytest.raises(ValueStoreError, match="is gone from the value store"):
        values.get(ref)
    assert values.missing([ref]) == [ref]
