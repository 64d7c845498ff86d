"""`RunRecorder`: the narrow interface a pipeline step writes its run through.

A step records what it did (metrics, tags, summary values, the data version, artifacts) and
never reaches through to the store: the recorder may be a tracked run (`RunHandle`), a rank of a
distributed job that records nothing (`SilentRun`), or a test's in-memory recorder. Rules:
- every method may be called from any thread;
- writes are merges: a key given again is replaced, other keys stay;
- `info()` reads the run back as recorded so far (lineage a step hands on: data version, git
  commit);
- `artifact_uri(name)` names where an artifact of the run lives (whether or not it exists yet),
  so a step can hand that location on (the checkpoint folder, the model folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from trainforge.entities import DataVersion, Run
from trainforge.errors import TrainingError

if TYPE_CHECKING:
    from trainforge.storage.artifacts import ArtifactStore


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


class SilentRun:
    """The run as the ranks of a torchrun step other than global rank 0 see it: every write is
    dropped, so only rank 0 records; where artifacts would go is named as rank 0's are."""

    def __init__(self, run_id: str, artifacts: ArtifactStore) -> None:
        self.run_id = run_id
        self.artifacts = artifacts

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        pass

    def set_tags(self, tags: dict[str, Any]) -> None:
        pass

    def set_summary(self, metrics: dict[str, float]) -> None:
        pass

    def set_data_version(self, version: DataVersion) -> None:
        pass

    def put_artifact(self, name: str, data: bytes) -> str:
        return self.artifact_uri(name)

    def log_artifact(self, path: str | Path, name: str | None = None) -> str:
        return self.artifact_uri(name or Path(path).name)

    def artifact_uri(self, name: str = "") -> str:
        root = self.artifacts.run_uri(self.run_id)
        return f"{root}/{name}" if name else root

    def info(self) -> Run:
        raise TrainingError(f"run {self.run_id}: only rank 0 reads its run back")

    def close(self) -> None:
        pass
