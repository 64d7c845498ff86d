"""How a data version is named in messages and listings: read from the database alone (no
object store, no table reader), so `runs show` and error messages stay cheap."""

from __future__ import annotations

from collections.abc import Sequence

from trainforge.entities import DataTag
from trainforge.storage.contracts import DataVersionStore


def version_names(versions: DataVersionStore, version_id: str) -> list[str]:
    """How people name a data version (`names_of` its tags)."""
    return names_of(versions.list_data_tags(version_id))


def names_of(tags: Sequence[DataTag]) -> list[str]:
    """A data version's names from its tags: `NAME@NUMBER` for each name it is numbered
    under, else its other tags (`NAME@TAG`); empty for a version only a run read."""
    numbered = [f"{t.name}@{t.tag}" for t in tags if t.tag.isdigit()]
    return numbered or [f"{t.name}@{t.tag}" for t in tags]


def version_label(versions: DataVersionStore, version_id: str) -> str:
    """A data version as messages name it: its names and its id's first 12 characters
    (`fraud@3 1a2b3c4d5e6f`), never the whole 64-character id."""
    return " ".join([*version_names(versions, version_id), version_id[:12]])
