"""Which versions of a model answer: the production version and, when there is one, the
canary, followed as their stages change.

Rules:
- `refresh` asks the registry store for the model's production and canary holders
  (`get_stage_holder`) and loads any it does not serve yet before switching to them,
  so a request is always answered by a fully loaded version; a version that fails to load is
  logged and the previous one keeps serving.
- `choose` sends a request to the canary with probability `canary_share` (a seeded generator),
  or, given a routing key (a request id), by a hash of it, so a client's requests stay on one
  version; otherwise to production. No production version: None.
- `poll` runs `refresh` every `interval` seconds until stopped, in a thread the server starts.
- The served pair is swapped as one tuple: readers on other threads see the old or new pair.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass

from trainforge.entities import ModelStage, ModelVersion
from trainforge.serving._model import ServedVersion
from trainforge.storage import RegistryStore

log = logging.getLogger("trainforge")
Loader = Callable[[ModelVersion], ServedVersion]


@dataclass(frozen=True)
class Served:
    production: ServedVersion | None
    canary: ServedVersion | None


def stage_version(store: RegistryStore, model_name: str, stage: ModelStage) -> ModelVersion | None:
    """The version of `model_name` holding `stage` (production or canary), or None."""
    return store.get_stage_holder(model_name, stage)


class VersionRouter:
    """The served versions of one model and the routing between them (see module rules)."""

    def __init__(self, store: RegistryStore, model_name: str, loader: Loader, *,
                 canary_share: float = 0.1, seed: int = 0) -> None:
        if not 0.0 <= canary_share <= 1.0:
            raise ValueError(f"canary_share must be within [0, 1], got {canary_share}")
        self.store = store
        self.model_name = model_name
        self.canary_share = canary_share
        self._loader = loader
        self._random = random.Random(seed)
        self._served = Served(None, None)
        self._lock = threading.Lock()

    @property
    def served(self) -> Served:
        return self._served

    def refresh(self) -> Served:
        """Follow the registry's stages now; returns what is served afterwards."""
        with self._lock:
            current = self._served
            production = self._follow(ModelStage.PRODUCTION, current.production)
            canary = self._follow(ModelStage.CANARY, current.canary)
            self._served = Served(production, canary)
            return self._served

    def _follow(self, stage: ModelStage, current: ServedVersion | None) -> ServedVersion | None:
        wanted = stage_version(self.store, self.model_name, stage)
        if wanted is None:
            return None
        if current is not None and current.label == wanted.version:
            return current
        try:
            loaded = self._loader(wanted)
        except Exception:  # any failure to load leaves the previous version serving
            log.exception("serving %s: cannot load version %s (%s); keeping %s",
                          self.model_name, wanted.version, stage.value,
                          current.label if current else "none")
            return current
        log.info("serving %s version %s as %s (%s)", self.model_name, wanted.version,
                 stage.value, loaded.runtime)
        return loaded

    def choose(self, key: str | None = None) -> tuple[ServedVersion, str] | None:
        """The version that answers a request and its role ("production" or "canary")."""
        served = self._served
        if served.production is None:
            return None
        if served.canary is not None and self._to_canary(key):
            return served.canary, "canary"
        return served.production, "production"

    def _to_canary(self, key: str | None) -> bool:
        if key is None:
            return self._random.random() < self.canary_share
        digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2**64 < self.canary_share

    def poll(self, stop: threading.Event, interval: float) -> None:
        """`refresh` every `interval` seconds until `stop` is set; errors are logged."""
        while not stop.wait(interval):
            try:
                self.refresh()
            except Exception:  # the store may be unreachable for a while; keep serving
                log.exception("serving %s: cannot read the registry", self.model_name)
