"""The protocols of data versions and of pipeline runs with their step attempts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from trainforge.entities import (
    DataTag,
    DataVersion,
    PipelineRun,
    PipelineRunStatus,
    StepRun,
    StepState,
)
from trainforge.storage.contracts._pages import DEFAULT_LIMIT, Page


class DataVersionStore(Protocol):
    """Content-addressed data versions: an id names exactly one set of files, so a version is
    never changed once stored.

    - `put_data_version` is a race-free insert: putting an id already stored returns the stored
      record unchanged (whatever else the argument says) and never raises `Conflict`;
    - `get_data_version` raises `NotFound` for an unknown id;
    - `list_data_versions` orders newest first (cursor: creation time, then id);
      `data_version_ids(prefix)` gives up to `limit` stored ids starting with `prefix`, sorted;
    - data profiles (`trainforge.profiles`, as JSON bytes) are stored under a key: a file's
      sha256 (`kind` "file") or a data version id (`kind` "version"); `put_data_profile`
      replaces a stored one, `get_data_profiles` returns those of the keys it finds;
    - a tag (`name@tag`) points at one stored version: `set_data_tag` creates or moves it
      (`NotFound` for an unknown version), `get_data_tag` raises `NotFound` naming
      `name@tag`; `list_data_tags` orders by name, then tag, those of one version if given;
      `set_data_tag` raises `Conflict` for a tag of digits;
    - a version's number under a name (`name@1`, `name@2`, ...: a tag of digits) is given once
      and kept forever: `number_data_version` returns the number the version has under
      `name`, or gives it the next one (one more than the highest), race-free across writers
      (`NotFound` for an unknown version);
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def put_data_version(self, version: DataVersion) -> DataVersion: ...

    def get_data_version(self, data_version_id: str) -> DataVersion: ...

    def list_data_versions(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[DataVersion]: ...

    def data_version_ids(self, prefix: str, limit: int = 2) -> list[str]: ...

    def set_data_tag(self, name: str, tag: str, data_version_id: str) -> DataTag: ...

    def put_data_profile(self, key: str, kind: str, rows: int, profile: bytes) -> None: ...

    def get_data_profiles(self, keys: Sequence[str]) -> dict[str, bytes]: ...

    def number_data_version(self, name: str, data_version_id: str) -> DataTag: ...

    def get_data_tag(self, name: str, tag: str) -> DataTag: ...

    def list_data_tags(self, data_version_id: str | None = None) -> list[DataTag]: ...


class StepOutputs(NamedTuple):
    """One attempt's recorded outputs (value references, or `{"memory": type}`), and its
    pipeline run's status and last activity."""

    status: PipelineRunStatus
    active_at: datetime
    outputs: dict[str, Any]


class PipelineRunStore(Protocol):
    """Pipeline runs and the attempts of their steps: what the runner persists
    (`trainforge.orchestration`), what `resume` and `explain-cache` read back.

    - `create_pipeline_run` records a `running` execution of an upserted pipeline (`NotFound`
      naming it otherwise; `Conflict` when the id is taken); `set_pipeline_run_status` sets
      `ended_at` when the status is terminal and clears it when it is `running` again (a
      resume);
    - `find_pipeline_run` takes an id or a unique prefix of one (`Ambiguous` listing the
      matches when several start so); `list_pipeline_runs` pages the pipeline runs newest
      first, of one pipeline and in one status where given;
    - `add_step_run` inserts one attempt and returns it with its id; `update_step_run` changes
      its state and, when given, its timings, error, cache key and parts, outputs and
      `cached_from`; `list_step_runs` returns a pipeline run's attempts in the order they were
      added;
    - `find_cached(cache_key, newer_than)` is the newest `succeeded` attempt with that key that
      ended after `newer_than` (any time when None): the execution a cache hit reuses, never a
      `cached` copy of it; `previous_step_run` is the newest attempt of `step` of the same
      pipeline with a cache key, added before `before` (a step run id): what `explain-cache`
      compares an attempt with;
    - `list_step_outputs` is every attempt's recorded outputs with its pipeline run's status
      and last activity (its end, or its start while it runs): what the value store's gc
      reads.
    """

    def create_pipeline_run(self, pipeline_run_id: str, pipeline_id: str,
                            source: dict[str, Any], options: dict[str, Any],
                            run_id: str | None = None) -> PipelineRun: ...

    def get_pipeline_run(self, pipeline_run_id: str) -> PipelineRun: ...

    def find_pipeline_run(self, id_or_prefix: str) -> PipelineRun: ...

    def list_pipeline_runs(self, pipeline_id: str | None = None,
                           status: PipelineRunStatus | None = None, limit: int = DEFAULT_LIMIT,
                           cursor: str | None = None) -> Page[PipelineRun]: ...

    def set_pipeline_run_status(self, pipeline_run_id: str,
                                status: PipelineRunStatus) -> PipelineRun: ...

    def add_step_run(self, pipeline_run_id: str, step: str, attempt: int, state: StepState,
                     started_at: datetime | None = None) -> StepRun: ...

    def update_step_run(
        self, step_run_id: int, state: StepState, *, started_at: datetime | None = None,
        ended_at: datetime | None = None, error: str | None = None,
        cache_key: str | None = None, cache_parts: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None, cached_from: int | None = None,
    ) -> None: ...

    def list_step_runs(self, pipeline_run_id: str) -> list[StepRun]: ...

    def find_cached(self, cache_key: str, newer_than: datetime | None = None) -> StepRun | None: ...

    def previous_step_run(self, pipeline_id: str, step: str, before: int) -> StepRun | None: ...

    def list_step_outputs(self) -> list[StepOutputs]: ...
