"""One trained, exported fraud model for the serving tests (session scope: training is the
expensive part), with a production version registered."""

from __future__ import annotations

import pytest
from trained_fraud import TrainedFraud, train_fraud

from trainforge.entities import ModelStage
from trainforge.export import export_model


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory, fraud_slice) -> TrainedFraud:
    fraud = train_fraud(tmp_path_factory.mktemp("served"), fraud_slice)
    export_model(fraud.artifacts, fraud.store.get_run(fraud.run_id))
    fraud.register(ModelStage.PRODUCTION)
    return fraud
