"""A data version's manifest: the files it holds, by name, content hash, size and rows.

Rules:
- Its id is `content_id` over the (name, sha256) pairs, the id a run that read the same files
  records (`IngestResult.fingerprint`): a snapshot, the runs that read its files and the
  profile stored beside them all name one id.
- Stored as canonical JSON (sorted keys, files sorted by name); reading checks that the id
  written in it is the id of its files, so a damaged manifest is refused, not trusted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from trainforge.errors import DataError
from trainforge.ingest import content_id

MANIFEST_FORMAT = 1


class ManifestEntry(NamedTuple):  # a manifest may list millions: a tuple is made fastest
    name: str
    sha256: str
    size: int
    rows: int


@dataclass(frozen=True)
class Manifest:
    source: str
    files: tuple[ManifestEntry, ...]

    @cached_property
    def version_id(self) -> str:
        return content_id((f.name, f.sha256) for f in self.files)

    @property
    def num_rows(self) -> int:
        return sum(f.rows for f in self.files)

    def to_json(self) -> bytes:
        body = {"format": MANIFEST_FORMAT, "version_id": self.version_id, "source": self.source,
                "files": [_entry(f) for f in sorted(self.files, key=lambda f: f.name)]}
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Manifest:
        """The manifest in `data`; DataError naming `where` when it is not one or its id does
        not match its files."""
        try:
            body: dict[str, Any] = json.loads(data)
            files = tuple(ManifestEntry(str(f["name"]), str(f["sha256"]), int(f["size"]),
                                        int(f["rows"])) for f in body["files"])
            manifest = cls(str(body["source"]), files)
            written = body["version_id"]
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{where}: not a data version manifest: {exc}") from None
        if written != manifest.version_id:
            raise DataError(f"{where}: damaged: its files hash to {manifest.version_id}, not "
                            f"the id it names ({written})")
        return manifest

    def file_dicts(self) -> tuple[dict[str, Any], ...]:
        """The files as a stored `DataVersion` lists them."""
        return tuple(_entry(f) for f in self.files)


def _entry(file: ManifestEntry) -> dict[str, Any]:
    return {"name": file.name, "sha256": file.sha256, "size": file.size, "rows": file.rows}
