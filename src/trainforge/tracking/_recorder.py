"""`RunRecorder`: the narrow interface a pipeline step writes its run through.

A step records what it did (metrics, tags, summary values, the data version, artifacts) and
never reaches through to the store: the recorder may be a tracked run (`RunHandle`), a rank of a
distributed job that records nothing (`NullRun`), or a test's in-memory recorder. Rules:
- every method may be called from any thread;
- writes are merges: a key given again is replaced, other keys stay;
- `info()` reads the run back as recorded so far (lineage a step hands on: data version, git
  commit);
- `artifact_uri(name)` names where an artifact of the run lives (whether or not it exists yet),
  so a step can hand that location on (the checkpoint folder, the model folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from trainforge.entities import DataVersion, Run


class RunRecorder(Protocol):
    @property
    def run_id(self) -> str: ...

    def log_metrics(self, metrics: dict[str, float], step: int) -> None: ...

    def set_tags(self, tags: dict[str, Any]) -> None: ...

    def set_summary(self, metrics: dict[str, float]) -> None: ...

    def set_data_version(self, version: DataVersion) -> None: ...

    def put_artifact(self, name: str, data: bytes) -> str: ...

    def log_artifact(self, path: str | Path, name: str | None = None) -> str: ...

    def artifact_uri(self, name: str = "") -> str: ...

    def info(self) -> Run: ...
