"""`RegistryStore`: model versions numbered per model, listed by model and number, in pages;
labels unique per model."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest
from contract_helpers import MISSING, RUN_MISSING, pages

from trainforge.entities import DataVersion, ModelStage
from trainforge.errors import Conflict, NotFound
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


def test_a_label_reads_back_and_none_is_the_default(registry: RegistryStore, run_id: str) -> None:
    plain = registry.create_model_version("m", run_id, "u", ModelStage.NONE, {})
    labelled = registry.create_model_version("m", run_id, "u", ModelStage.NONE, {}, label="3.1")
    other = registry.create_model_version("m", run_id, "u", ModelStage.NONE, {})

    assert (plain.label, labelled.label, other.label) == (None, "3.1", None)
    assert registry.get_model_version("m", "2") == labelled
    assert [m.label for m in registry.list_model_versions("m").items] == [None, "3.1", None]
    assert registry.get_model_version_by_label("m", "3.1") == labelled


def test_a_taken_label_is_a_conflict_naming_it_and_registers_nothing(
    registry: RegistryStore, run_id: str
) -> None:
    registry.create_model_version("m", run_id, "u", ModelStage.NONE, {}, label="v1")

    with pytest.raises(Conflict) as raised:
        registry.create_model_version("m", run_id, "u2", ModelStage.STAGING, {}, label="v1")
    assert "'m'" in str(raised.value) and "'v1'" in str(raised.value)
    assert [m.version for m in registry.list_model_versions("m").items] == ["1"]
    assert [c.version for c in registry.list_stage_changes("m").items] == ["1"]
    assert registry.get_model_version_by_label("m", "v1").artifact_uri == "u"
    assert registry.create_model_version("m", run_id, "u", ModelStage.NONE, {},
                                         label="v2").version == "2"


def test_one_label_may_name_versions_of_different_models(
    registry: RegistryStore, run_id: str
) -> None:
    a = registry.create_model_version("a", run_id, "u", ModelStage.NONE, {}, label="1.0")
    b = registry.create_model_version("b", run_id, "u", ModelStage.NONE, {}, label="1.0")

    assert registry.get_model_version_by_label("a", "1.0") == a
    assert registry.get_model_version_by_label("b", "1.0") == b


def test_an_unknown_label_raises_not_found_naming_it(registry: RegistryStore, run_id: str) -> None:
    registry.create_model_version("m", run_id, "u", ModelStage.NONE, {}, label="1.0")
    registry.create_model_version("n", run_id, "u", ModelStage.NONE, {}, label="2.0")

    with pytest.raises(NotFound) as raised:
        registry.get_model_version_by_label("m", "2.0")
    assert str(raised.value) == "model 'm' has no version labelled '2.0'"


def test_concurrent_registrations_of_one_label_store_it_once(
    registry: RegistryStore, run_id: str
) -> None:
    def register(number: int) -> str:
        try:
            return registry.create_model_version("m", run_id, f"file:///{number}",
                                                 ModelStage.NONE, {}, label="racer").version
        except Conflict as exc:
            return str(exc)

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(register, range(4)))
    [stored] = registry.list_model_versions("m").items
    assert stored.label == "racer" and outcomes.count(stored.version) == 1
    assert all("'racer'" in outcome for outcome in outcomes if outcome != stored.version)
    assert registry.get_model_version_by_label("m", "racer") == stored
