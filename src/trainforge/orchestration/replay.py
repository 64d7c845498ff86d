"""What a cached step recorded, kept so that a run reusing its outputs records it too.

A step that records to the tracked run (tags, the data version, metrics, artifacts) and may be
taken from the cache records through a `CapturingRecorder`: every write goes to the run as
usual and is also kept. The runner stores what was kept as a value beside the step's outputs
(under `RECORDS`); when a later pipeline run takes the step from the cache, `replay` writes it
to that run: the same tags, data version link, metrics and artifact bytes, so the run holds
everything its own attempt would have recorded (a data version, a validation report, a
profile, a fitted feature pipeline), and its step run names the run it came from
(`cached_from`).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from trainforge.entities import DataVersion, Run
from trainforge.tracking import RunRecorder

RECORDS = "_recorded"  # the stored outputs' key of what the step recorded


class CapturingRecorder:
    """`recorder`, keeping a copy of every write (`records`)."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        self.writes: list[dict[str, Any]] = []

    @property
    def run_id(self) -> str:
        return self.recorder.run_id

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.recorder.log_metrics(metrics, step)
        self.writes.append({"metrics": dict(metrics), "step": step})

    def set_tags(self, tags: dict[str, Any]) -> None:
        self.recorder.set_tags(tags)
        self.writes.append({"tags": tags})

    def set_summary(self, metrics: dict[str, float]) -> None:
        self.recorder.set_summary(metrics)
        self.writes.append({"summary": dict(metrics)})

    def set_data_version(self, version: DataVersion) -> None:
        self.recorder.set_data_version(version)
        self.writes.append({"data_version": {
            "data_version_id": version.data_version_id, "source": version.source,
            "files": list(version.files), "num_rows": version.num_rows}})

    def put_artifact(self, name: str, data: bytes) -> str:
        uri = self.recorder.put_artifact(name, data)
        self.writes.append({"artifact": name, "bytes": base64.b64encode(data).decode()})
        return uri

    def log_artifact(self, path: str | Path, name: str | None = None) -> str:
        uri = self.recorder.log_artifact(path, name)
        self.writes.append({"artifact": name or Path(path).name,
                            "bytes": base64.b64encode(Path(path).read_bytes()).decode()})
        return uri

    def artifact_uri(self, name: str = "") -> str:
        return self.recorder.artifact_uri(name)

    def info(self) -> Run:
        return self.recorder.info()

    def records(self) -> dict[str, Any] | None:
        """What was written, as a plain value; None when nothing was."""
        return {"writes": self.writes} if self.writes else None


def replay(records: dict[str, Any], recorder: RunRecorder) -> None:
    """Write `records` (a `CapturingRecorder`'s) to `recorder`'s run, in their order."""
    for write in records["writes"]:
        if "metrics" in write:
            recorder.log_metrics(write["metrics"], write["step"])
        elif "tags" in write:
            recorder.set_tags(write["tags"])
        elif "summary" in write:
            recorder.set_summary(write["summary"])
        elif "data_version" in write:
            version = write["data_version"]
            recorder.set_data_version(DataVersion(
                version["data_version_id"], version["source"], tuple(version["files"]),
                int(version["num_rows"])))
        else:
            recorder.put_artifact(write["artifact"], base64.b64decode(write["bytes"]))
