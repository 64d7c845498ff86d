"""Which versions answer: the registry's production and canary versions, followed as stages
change (on SQLite and PostgreSQL), a version that fails to load leaving the previous one
serving, and the canary share by draw or by request id."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from trained_fraud import place_in_stage

from trainforge.entities import ModelStage, ModelVersion
from trainforge.serving import VersionRouter
from trainforge.storage import Store


@dataclass(frozen=True)
class Loaded:
    """Stands in for a loaded `ServedVersion`: the router reads only `label`."""

    version: ModelVersion
    runtime: str = "test"

    @property
    def label(self) -> str:
        return self.version.version


@pytest.fixture
def register(store: Store):
    experiment = store.get_or_create_experiment("serving")
    run = store.create_run(experiment.experiment_id, {}, {}, "file:///unused")

    def add(stage: ModelStage) -> ModelVersion:
        version = store.create_model_version("m", run.run_id, "file:///unused",
                                             ModelStage.STAGING, metrics={})
        return place_in_stage(store, version, stage)

    return add


def _router(store: Store, share: float = 0.25, broken: frozenset[str] = frozenset()):
    def load(version: ModelVersion) -> Loaded:
        if version.version in broken:
            raise RuntimeError("cannot load")
        return Loaded(version)

    return VersionRouter(store, "m", load, canary_share=share, seed=3)  # type: ignore[arg-type]


def test_production_and_canary_follow_the_registry(store, register):
    router = _router(store)
    assert router.refresh().production is None and router.choose() is None
    register(ModelStage.STAGING)
    first = register(ModelStage.PRODUCTION)
    served = router.refresh()
    assert served.production.label == first.version and served.canary is None
    canary = register(ModelStage.CANARY)
    assert router.refresh().canary.label == canary.version
    newer = register(ModelStage.PRODUCTION)
    assert router.refresh().production.label == newer.version


def test_a_version_that_fails_to_load_leaves_the_previous_one_serving(store, register):
    first = register(ModelStage.PRODUCTION)
    broken = register(ModelStage.STAGING)  # numbered before it is promoted below
    router = _router(store, broken=frozenset({str(int(broken.version) + 1)}))
    router.refresh()
    register(ModelStage.PRODUCTION)
    assert router.refresh().production.label == first.version


def test_the_canary_share_by_draw_and_by_request_id(store, register):
    register(ModelStage.PRODUCTION)
    register(ModelStage.CANARY)
    router = _router(store, share=0.25)
    router.refresh()
    roles = [router.choose()[1] for _ in range(4000)]
    assert 900 <= roles.count("canary") <= 1100
    by_id = [router.choose(f"request-{i}")[1] for i in range(4000)]
    assert 900 <= by_id.count("canary") <= 1100
    assert {router.choose("client-1")[1] for _ in range(50)} == {router.choose("client-1")[1]}


def test_a_share_outside_zero_to_one_is_refused(store):
    with pytest.raises(ValueError, match="canary_share must be within"):
        _router(store, share=1.5)
