"""One trained, exported fraud model for the serving tests (session scope: training is the
expensive part), with a production version registered; and, per module, the serve app over it
on a live server (`router`, `client`, `served`)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from live_server import live_server, router_of
from trained_fraud import TrainedFraud, train_fraud

from trainforge.entities import ModelStage
from trainforge.export import export_model
from trainforge.serving import ServedVersion, VersionRouter, create_app


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory, fraud_slice) -> TrainedFraud:
    fraud = train_fraud(tmp_path_factory.mktemp("served"), fraud_slice)
    export_model(fraud.artifacts, fraud.store.get_run(fraud.run_id))
    fraud.register(ModelStage.PRODUCTION)
    return fraud


@pytest.fixture(scope="module")
def router(trained: TrainedFraud) -> VersionRouter:
    return router_of(trained)


@pytest.fixture(scope="module")
def client(router: VersionRouter) -> Iterator[httpx.Client]:
    with live_server(create_app(router)) as client:
        yield client


@pytest.fixture(scope="module")
def served(client: httpx.Client, router: VersionRouter) -> ServedVersion:
    """The production version the client's app serves (its lifespan loaded it)."""
    assert router.served.production is not None
    return router.served.production
