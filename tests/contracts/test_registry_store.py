"""`RegistryStore`: model versions numbered per model, listed by model and number, in pages."""

from __future__ import annotations

import math

import pytest
from contract_helpers import MISSING, RUN_MISSING, pages

from trainforge.entities import DataVersion, ModelStage
from trainforge.errors import NotFound
from trainforge.storage import RegistryStore, Store


def test_model_versions_are_numbered_per_model(registry: RegistryStore, run_id: str) -> None:
    made = [registry.create_model_version(name, run_id, f"file:///{name}", ModelStage.NONE, {})
            for name in ["a", "a", "b", "a"]]
    assert [(m.model_name, m.version) for m in made] == [("a", "1"), ("a", "2"), ("b", "1"),
                                                         ("a", "3")]
    assert registry.get_model_version("a", "2") == made[1]
    assert registry.list_model_versions("b").items == (made[2],)
    assert [m.version for m in registry.list_model_versions().items] == ["1", "2", "3", "1"]


def test_model_version_keeps_its_fields_and_sorts_numerically(
    registry: RegistryStore, store: Store, run_id: str
) -> None:
    store.put_data_version(DataVersion("d1", "file:///data", (), 1))
    for _ in range(10):
        registry.create_model_version("m", run_id, "file:///m", ModelStage.NONE, {})
    last = registry.create_model_version("m", run_id, "file:///m11", ModelStage.STAGING,
                                         {"acc": 0.9}, data_version_id="d1", git_commit="abc")
    assert (last.version, last.stage, last.metrics) == ("11", ModelStage.STAGING, {"acc": 0.9})
    assert (last.data_version_id, last.git_commit, last.run_id) == ("d1", "abc", run_id)
    assert [m.version for m in registry.list_model_versions("m").items] == [
        str(i) for i in range(1, 12)]


def test_non_finite_model_metrics_read_back_as_nan(registry: RegistryStore, run_id: str) -> None:
    version = registry.create_model_version("m", run_id, "file:///a/model", ModelStage.STAGING,
                                            {"test_roc_auc": math.nan, "loss": math.inf})
    stored = registry.get_model_version("m", version.version).metrics
    assert math.isnan(stored["test_roc_auc"]) and math.isnan(stored["loss"])


def test_model_versions_come_in_pages_by_model_then_number(
    registry: RegistryStore, run_id: str
) -> None:
    for name in ["b", "a"] * 6:
        registry.create_model_version(name, run_id, "u", ModelStage.NONE, {})
    walked = pages(lambda cursor: registry.list_model_versions(limit=5, cursor=cursor))
    assert [[f"{m.model_name}{m.version}" for m in page.items] for page in walked] == [
        ["a1", "a2", "a3", "a4", "a5"], ["a6", "b1", "b2", "b3", "b4"], ["b5", "b6"]]
    of_b = pages(lambda cursor: registry.list_model_versions("b", 4, cursor))
    assert [[m.version for m in page.items] for page in of_b] == [["1", "2", "3", "4"],
                                                                  ["5", "6"]]


@pytest.mark.parametrize(("name", "version", "message"), [
    ("m", "1", "model 'm' version '1' not found"),
    ("m", MISSING, f"model 'm' version '{MISSING}' not found"),
])
def test_an_unknown_version_raises_not_found_naming_it(
    registry: RegistryStore, name: str, version: str, message: str
) -> None:
    with pytest.raises(NotFound) as raised:
        registry.get_model_version(name, version)
    assert str(raised.value) == message


def test_registering_for_a_missing_run_raises_not_found(registry: RegistryStore) -> None:
    with pytest.raises(NotFound) as raised:
        registry.create_model_version("m", MISSING, "u", ModelStage.NONE, {})
    assert str(raised.value) == RUN_MISSING
    assert registry.list_model_versions().items == ()
