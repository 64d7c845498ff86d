"""Served inputs are flagged against the training data's stored profile: no row of the data the
model trained on is flagged with the default bounds (its exact minimum and maximum), quantile
bounds a user chooses flag the tails, and categories the data holds are never unseen."""

from __future__ import annotations

import pandas as pd
import pytest

from trainforge.profiles import load_profile
from trainforge.serving import load_served_version
from trainforge.versioning import open_repository


@pytest.fixture(scope="module")
def training_rows(trained) -> list[dict]:
    """Every row of the data version the served model trained on, as request records."""
    repository = open_repository(trained.settings, trained.store)
    _, folder = repository.materialize(trained.version.data_version_id)
    frame = pd.read_parquet(folder).drop(columns=["is_fraud"])
    return frame.to_dict("records")


def _served(trained, **options):
    profile = load_profile(trained.store, trained.version.data_version_id)
    assert profile is not None, "every run profiles what it read"
    return load_served_version(trained.artifacts, trained.version,
                               trained.store.get_run(trained.run_id), runtime="torch",
                               data_profile=profile, **options)


def test_no_training_row_is_flagged_by_default(trained, training_rows) -> None:
    flags = _served(trained).checker.flags(training_rows)

    assert len(flags) == len(training_rows) > 10_000
    assert [f for f in flags if f] == []


def test_quantile_bounds_flag_the_tails_of_the_training_data(trained, training_rows) -> None:
    checker = _served(trained, range_quantiles=(0.05, 0.95)).checker
    flags = checker.flags(training_rows)

    amounts = [f for found in flags for f in found if f["field"] == "amount"]
    share = len(amounts) / len(training_rows)
    assert 0.08 < share < 0.12, share  # 5% below, 5% above (quantile sketch error aside)
    assert {f["flag"] for found in flags for f in found} == {"out_of_range"}
    low, high = checker.ranges["amount"]
    assert all(not low <= f["value"] <= high for f in amounts)
    with pytest.raises(ValueError, match="0 <= low < high <= 1"):
        _served(trained, range_quantiles=(0.9, 0.1))
