"""`Credentials`: the storage options this process opens each location with, by location.

Storage options may hold secrets (`key`, `secret`, a token) and name a deployment (an
endpoint), so they are never recorded: a stored value names its location and the options'
names only, and the process decoding it looks its options up here. An entry point fills the
provider from what it was given: the file `TRAINFORGE_CREDENTIALS` names (`from_file`), and a
spec's `data.storage_options` for `data.source` and `training.checkpoint.storage_options` for
`training.checkpoint.location`, over it; a location with no entry opens with none, where
fsspec reads the environment (`AWS_*`) itself.

The file (keep it readable by its owner only):

    locations:
      s3://team-bucket/checkpoints:
        key: AKIA...
        secret: ...
        client_kwargs: {endpoint_url: "http://minio:9000"}
    profiles:                      # TRAINFORGE_PROFILE=prod: its locations over the above
      prod:
        locations:
          s3://team-bucket: {key: AKIB..., secret: ...}

A lookup takes the entry of the location itself, else that of the longest entry the location
lies under (`s3://bucket/ckpt` covers `s3://bucket/ckpt/<run>/step-10`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainforge.config._loading import read_yaml_mapping
from trainforge.errors import SpecError


class Credentials:
    """Storage options by location; never changed once made (`merged` returns another
    provider), and picklable, so a step run in a spawned process gets them."""

    def __init__(self, by_location: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._by_location = {location: dict(options)
                             for location, options in (by_location or {}).items()}

    @classmethod
    def from_file(cls, path: Path, profile: str | None = None) -> Credentials:
        """The storage options of a credentials file's `locations`, with those of its named
        `profile` (`profiles: {NAME: {locations: ...}}`) over them; `SpecError` naming the
        file and the entry that is not a location with a mapping of options, or the profile
        it does not have."""
        document = read_yaml_mapping(path)
        if not set(document) or set(document) - {"locations", "profiles"}:
            raise SpecError([f"{path}: expected a mapping with `locations:` (location -> "
                             "storage options) and `profiles:` (name -> locations), and "
                             "nothing else"])
        profiles = document.get("profiles") or {}
        if not isinstance(profiles, dict):
            raise SpecError([f"{path}: profiles: expected a mapping of name -> locations"])
        found = cls(_locations(path, document, "locations"))
        if profile is None:
            return found
        if profile not in profiles:
            raise SpecError([f"{path}: has no profile {profile!r} (TRAINFORGE_PROFILE); its "
                             f"profiles: {sorted(profiles) or 'none'}"])
        named = profiles[profile]
        if not isinstance(named, dict) or set(named) != {"locations"}:
            raise SpecError([f"{path}: profiles.{profile}: expected a mapping with "
                             "`locations:` and nothing else"])
        return found.merged(cls(_locations(path, named, "locations",
                                           f"profiles.{profile}.locations")))

    def options_for(self, location: str) -> dict[str, Any] | None:
        """The options `location` opens with, or None when none were given for it."""
        found = self._by_location.get(location)
        if found is None:
            covering = [entry for entry in self._by_location
                        if location.startswith(entry.rstrip("/") + "/")]
            found = self._by_location[max(covering, key=len)] if covering else None
        return None if found is None else dict(found)

    def merged(self, other: Credentials) -> Credentials:
        """These credentials with `other`'s entries over them."""
        return Credentials({**self._by_location, **other._by_location})

    def locations(self) -> list[str]:
        """The locations given options, sorted (their options are not shown)."""
        return sorted(self._by_location)

    def __repr__(self) -> str:
        return f"Credentials(locations={self.locations()})"


def _locations(path: Path, document: Mapping[str, Any], key: str,
               where: str = "locations") -> dict[str, Any]:
    """The `key` entry of `document`: storage options by location; `SpecError` naming the
    file and each entry that is not a location with a mapping of options."""
    locations = document.get(key) or {}
    if not isinstance(locations, dict):
        raise SpecError([f"{path}: {where}: expected a mapping with `locations:` of location "
                         "-> storage options"])
    problems = [f"{path}: {where}.{location}: expected a mapping of storage options"
                for location, options in locations.items()
                if not isinstance(location, str) or not isinstance(options, dict)]
    if problems:
        raise SpecError(problems)
    return locations
