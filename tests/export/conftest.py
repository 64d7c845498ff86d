"""One trained fraud model for the export tests (session scope: training is the expensive
part)."""

from __future__ import annotations

import pytest
from trained_fraud import TrainedFraud, train_fraud


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory, fraud_slice) -> TrainedFraud:
    return train_fraud(tmp_path_factory.mktemp("exported"), fraud_slice)
