"""`DataVersionStore`: content-addressed, stored once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timezone

import pytest
from contract_helpers import MISSING

from trainforge.entities import DataVersion
from trainforge.errors import Conflict, NotFound
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


def _version(data_versions: DataVersionStore, char: str) -> DataVersion:
    return data_versions.put_data_version(DataVersion(char * 64, "data/", (), 1))


def test_data_versions_list_newest_first_in_pages(data_versions: DataVersionStore) -> None:
    stored = [_version(data_versions, char) for char in "abc"]

    first = data_versions.list_data_versions(limit=2)
    rest = data_versions.list_data_versions(limit=2, cursor=first.next_cursor)

    assert [v.data_version_id for v in first.items + rest.items] == [
        v.data_version_id for v in reversed(stored)]
    assert rest.next_cursor is None


def test_data_version_ids_by_prefix(data_versions: DataVersionStore) -> None:
    data_versions.put_data_version(DataVersion("ab" + "0" * 62, "s", (), 1))
    data_versions.put_data_version(DataVersion("ab" + "1" * 62, "s", (), 1))
    data_versions.put_data_version(DataVersion("a%" + "1" * 62, "s", (), 1))

    assert data_versions.data_version_ids("ab") == ["ab" + "0" * 62, "ab" + "1" * 62]
    assert data_versions.data_version_ids("ab1") == ["ab" + "1" * 62]
    assert data_versions.data_version_ids("a%") == ["a%" + "1" * 62]
    assert data_versions.data_version_ids("a_") == []
    assert data_versions.data_version_ids("ab", limit=1) == ["ab" + "0" * 62]


def test_a_data_tag_points_at_one_version_and_moves(data_versions: DataVersionStore) -> None:
    old, new = _version(data_versions, "a"), _version(data_versions, "b")

    data_versions.set_data_tag("fraud", "latest", old.data_version_id)
    data_versions.set_data_tag("fraud", "day10", old.data_version_id)
    moved = data_versions.set_data_tag("fraud", "latest", new.data_version_id)

    assert moved.data_version_id == new.data_version_id and moved.created_at is not None
    assert data_versions.get_data_tag("fraud", "latest") == moved
    assert [(t.name, t.tag) for t in data_versions.list_data_tags()] == [
        ("fraud", "day10"), ("fraud", "latest")]
    assert [t.tag for t in data_versions.list_data_tags(old.data_version_id)] == ["day10"]


def test_unknown_tags_and_versions_raise_not_found(data_versions: DataVersionStore) -> None:
    with pytest.raises(NotFound, match=r"data tag 'fraud@nope' not found"):
        data_versions.get_data_tag("fraud", "nope")
    with pytest.raises(NotFound, match=r"data version .* not found"):
        data_versions.set_data_tag("fraud", "latest", MISSING)


def test_data_profiles_are_stored_by_key_and_replaced(data_versions: DataVersionStore) -> None:
    data_versions.put_data_profile("f" * 64, "file", 10, b'{"rows": 10}')
    data_versions.put_data_profile("v" * 64, "version", 30, b'{"rows": 30}')
    data_versions.put_data_profile("f" * 64, "file", 11, b'{"rows": 11}')

    found = data_versions.get_data_profiles(["f" * 64, "v" * 64, MISSING])

    assert found == {"f" * 64: b'{"rows": 11}', "v" * 64: b'{"rows": 30}'}
    assert data_versions.get_data_profiles([]) == {}


def test_versions_are_numbered_under_a_name_once_and_for_good(
    data_versions: DataVersionStore,
) -> None:
    first, second = _version(data_versions, "a"), _version(data_versions, "b")

    numbered = [data_versions.number_data_version("fraud", v.data_version_id)
                for v in (first, second, first)]
    other_name = data_versions.number_data_version("feed", second.data_version_id)

    assert [(t.tag, t.data_version_id) for t in numbered] == [
        ("1", first.data_version_id), ("2", second.data_version_id),
        ("1", first.data_version_id)]
    assert (other_name.name, other_name.tag) == ("feed", "1")
    assert data_versions.get_data_tag("fraud", "2").data_version_id == second.data_version_id
    with pytest.raises(Conflict, match=r"'fraud@2': a tag of digits is a version's number"):
        data_versions.set_data_tag("fraud", "2", first.data_version_id)
    with pytest.raises(NotFound, match=r"data version .* not found"):
        data_versions.number_data_version("fraud", MISSING)


def test_versions_numbered_at_once_get_distinct_numbers(data_versions: DataVersionStore) -> None:
    versions = [_version(data_versions, char) for char in "abcdef"]

    with ThreadPoolExecutor(6) as pool:
        tags = list(pool.map(lambda v: data_versions.number_data_version(
            "feed", v.data_version_id), versions))

    assert sorted(int(t.tag) for t in tags) == [1, 2, 3, 4, 5, 6]
    assert {t.data_version_id for t in tags} == {v.data_version_id for v in versions}
