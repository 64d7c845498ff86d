"""`DataVersionStore`: content-addressed, stored once."""

from __future__ import annotations

from datetime import timezone

import pytest
from contract_helpers import MISSING

from trainforge.entities import DataVersion
from trainforge.errors import NotFound
from trainforge.storage import DataVersionStore


def test_data_version_round_trips_and_is_content_addressed(
    data_versions: DataVersionStore,
) -> None:
    files = ({"path": "a.csv", "sha256": "f" * 64, "size": 10}, {"path": "b.csv", "size": 3})
    version = DataVersion("d" * 64, "s3://bucket/raw", files, 13)
    stored = data_versions.put_data_version(version)
    assert (stored.data_version_id, stored.source, stored.files, stored.num_rows) == (
        version.data_version_id, version.source, files, 13
    )
    assert stored.created_at is not None and stored.created_at.tzinfo == timezone.utc
    assert data_versions.put_data_version(DataVersion("d" * 64, "elsewhere", (), 0)) == stored
    assert data_versions.get_data_version("d" * 64) == stored


def test_an_unknown_data_version_raises_not_found_naming_it(
    data_versions: DataVersionStore,
) -> None:
    with pytest.raises(NotFound) as raised:
        data_versions.get_data_version(MISSING)
    assert str(raised.value) == f"data version '{MISSING}' not found"
