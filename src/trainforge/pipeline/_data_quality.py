"""The data-quality steps of the pipeline: `profile` (the data read, profiled and stored beside
its data version) and `drift` (that profile against a reference profile).

Rules:
- `profile` profiles every row read (before any quarantine), reusing the stored profile of
  each file profiled before; it records the profile summary as the `data/profile.json`
  artifact and its row count and columns in the `profile` tag.
- `drift`'s reference is `data.drift.reference` (a data version), else the data version of
  the production version of `data.drift.model` (default: `registry.model_name`). With no
  reference, or a reference without a stored profile, the step logs why and records the
  `drift` tag as skipped. A drift report goes to the `data/drift.json` artifact and the `drift`
  tag; drift fires the `data.drift_detected` alert (which records the tag with its event)
  and, with `on_drift: fail`, stops the run (`DataDriftError`).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from trainforge.config import DataSpec, RegistrySpec
from trainforge.entities import ModelStage
from trainforge.errors import DataDriftError, DataError
from trainforge.events import DRIFT_DETECTED, data_event
from trainforge.ingest import IngestResult
from trainforge.pipeline._alerts import Alert
from trainforge.pipeline._streaming import StreamedData
from trainforge.profiles import (
    DatasetProfile,
    compute_drift,
    load_profile,
    profile_ingested,
    profile_listing,
)
from trainforge.storage.contracts import RegistryStore
from trainforge.tracking import RunRecorder
from trainforge.versioning import DataRepository, version_label

log = logging.getLogger("trainforge")
PROFILE_ARTIFACT = "data/profile.json"
DRIFT_ARTIFACT = "data/drift.json"


def profile(data: DataRepository | None, read: IngestResult | StreamedData,
            run: RunRecorder) -> dict[str, Any]:
    if data is None:
        return {"profile": None}
    if isinstance(read, StreamedData):
        stored = profile_listing(data.versions, read.plan.listing,
                                 [f.sha256 for f in read.files])
    else:
        stored = profile_ingested(data.versions, read)
    run.put_artifact(PROFILE_ARTIFACT,
                     json.dumps(stored.profile.summary(), indent=2, default=str).encode())
    run.set_tags({"profile": {"rows": stored.profile.rows,
                              "columns": len(stored.profile.columns),
                              "files_profiled": stored.profiled, "files": stored.files}})
    return {"profile": stored.profile}


def drift(spec: DataSpec, registry_spec: RegistrySpec | None, data: DataRepository | None,
          registry: RegistryStore | None, alert: Alert | None, read: IngestResult | StreamedData,
          profile: DatasetProfile | None, run: RunRecorder) -> dict[str, Any]:
    settings = spec.drift
    assert settings is not None
    if data is None or profile is None:
        return {"drift": None}
    reference_id, why = _reference(spec, registry_spec, data, registry)
    reference = None if reference_id is None else load_profile(data.versions, reference_id)
    if reference is None or reference_id is None:
        if reference_id is not None:
            why = why or (f"data version {version_label(data.versions, reference_id)} has "
                          "no stored profile")
        log.warning("drift: not checked: %s", why)
        run.set_tags({"drift": {"checked": False, "reason": why}})
        return {"drift": None}
    report = compute_drift(reference, profile, settings.thresholds)
    body = {"reference": reference_id, "current": read.fingerprint, **report.to_dict()}
    run.put_artifact(DRIFT_ARTIFACT, json.dumps(body, indent=2).encode())
    tags = {"drift": {"checked": True, "drifted": report.drifted, "reference": reference_id,
                      "columns": report.drifted_columns}}
    if not report.drifted or alert is None:
        run.set_tags(tags)
    if report.drifted:
        summary = report.summary()
        if alert is not None:
            alert(run, tags, data_event(DRIFT_DETECTED, run_id=run.run_id,
                                        experiment_id=run.info().experiment_id,
                                        source=read.source, data_version_id=read.fingerprint,
                                        summary=f"{read.source}: {summary.splitlines()[0]}",
                                        report=body))
        if settings.on_drift == "fail":
            raise DataDriftError(f"{read.source}: the data drifted from data version "
                                 f"{version_label(data.versions, reference_id)}\n{summary}",
                                 report)
    return {"drift": report}


def _reference(spec: DataSpec, registry_spec: RegistrySpec | None, data: DataRepository,
               registry: RegistryStore | None) -> tuple[str | None, str]:
    settings = spec.drift
    assert settings is not None
    if settings.reference is not None:
        try:
            return data.resolve(settings.reference), ""
        except DataError as exc:
            raise DataError(f"data.drift.reference: {exc}") from None
    model = settings.model or (registry_spec.model_name if registry_spec else None)
    if model is None:
        return None, "no data.drift.reference and no model to take the production data of"
    holder = registry.get_stage_holder(model, ModelStage.PRODUCTION) if registry else None
    if holder is None or holder.data_version_id is None:
        return None, f"model {model!r} has no production version with a data version yet"
    return holder.data_version_id, ""
