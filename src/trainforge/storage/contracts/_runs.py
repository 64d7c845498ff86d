"""The protocols of experiments, runs, their metric series and checkpoint records."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from trainforge.entities import CheckpointRecord, Experiment, MetricPoint, Pipeline, Run, RunStatus
from trainforge.storage.contracts._pages import DEFAULT_LIMIT, HISTORY_LIMIT, Page


class ExperimentStore(Protocol):
    """Experiments (named groups of runs) and pipelines (a DAG's wiring).

    - `get_or_create_experiment` is a race-free upsert by name: concurrent callers with one name
      all get the same experiment; the description is set only when it is created;
    - `upsert_pipeline` inserts or replaces the pipeline with that id (last writer wins), as
      a run records its pipeline; a registered pipeline is left as it was registered (and
      returned so);
    - `register_pipeline` stores a pipeline with its `spec` (`ValueError` without one),
      `registered_at` now: over a pipeline its runs recorded, or one registered with the
      same name, wiring and spec (then returned unchanged); one registered with another is
      a `Conflict` naming who registered it, unless `replace`;
    - `get_pipeline` (`NotFound` for an unknown id); `list_pipelines` by id, all of them,
      only the registered (`registered=True`) or only those runs recorded (False);
    - `list_experiments` orders by name (names are unique); the cursor holds the last name;
    - `get_experiment` raises `NotFound` for an unknown id;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def get_or_create_experiment(self, name: str, description: str = "") -> Experiment: ...

    def get_experiment(self, experiment_id: str) -> Experiment: ...

    def list_experiments(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Experiment]: ...

    def upsert_pipeline(self, pipeline: Pipeline) -> Pipeline: ...

    def register_pipeline(self, pipeline: Pipeline, replace: bool = False) -> Pipeline: ...

    def get_pipeline(self, pipeline_id: str) -> Pipeline: ...

    def list_pipelines(self, registered: bool | None = None, limit: int = DEFAULT_LIMIT,
                       cursor: str | None = None) -> Page[Pipeline]: ...


class RunStore(Protocol):
    """Runs: created RUNNING, ended once per attempt (a resume reopens one), never deleted.

    User data and system state never share a namespace: `params` and `tags` belong to the
    user; `system` holds what trainforge itself reads back (liveness host and pid, checkpoint
    location and policy, the spec path and overrides a run started with), and `spec_hash` the
    hash of the resolved spec a pipeline run executes (indexed, so that `resume: auto` finds
    the runs of one spec with `list_runs(spec_hash=...)`).

    - `create_run`: a new RUNNING run, heartbeat now. `Conflict` when `run_id` is taken (the
      only `Conflict` of this area);
      `NotFound` for a missing experiment, pipeline or parent run; `ValueError` for a
      `spec_hash` that is empty or longer than 64 characters;
    - `log_params`, `set_tags`, `set_system` merge top-level keys (a key given again is
      replaced) as one read-modify-write under the run's lock: concurrent merges into one run
      lose no key. They are idempotent;
    - `set_data_version` links a stored data version (`NotFound` for a missing one);
    - `end_run` sets status, error and end time (now by default), overwriting an earlier
      end (a replayed end record lands the same); `reopen_run` makes a run RUNNING again (no
      end, no error, heartbeat now), whatever its status; with `job` (the key of a multi-node
      job, whose launchers all reopen the run) it does so under the run's lock and records
      `system["job"] = job`, and a run already RUNNING for that same job is returned as it is
      (a later launcher joins), while one RUNNING for another job is a `Conflict`;
    - `heartbeat` sets the heartbeat to now and adds `device_hours` (>= 0, else `ValueError`);
      a CRASHED run that beats is alive after all and becomes RUNNING again;
    - `mark_crashed` ends as CRASHED every RUNNING run not seen since `heartbeat_before` (its
      end is its last heartbeat) and returns them, oldest first;
    - every method taking a `run_id` raises `NotFound` for an unknown run;
    - `find_run` takes what a person types: a whole run id, or the start of one (the short ids
      tables show). An exact id wins; else the one run whose id starts with the text (case
      matters); `NotFound` when none does, `Ambiguous` listing candidates when several do,
      `ValueError` for empty text;
    - `list_runs` orders newest `started_at` first, then by run id; the cursor holds that pair,
      so runs started after the listing began never show up on its later pages;
    - `search_runs` filters and sorts with the query language of `trainforge.storage.query`
      (`metrics.`, `params.`, `tags.`, `system.` fields and run attributes, compared with
      numbers, strings or booleans, joined by `and` / `or` and parentheses; `QueryError` for a
      malformed filter or sort), then newest first, then by run id; the
      cursor holds the sort values of the last run it covered (see the module docstring for
      values that change meanwhile);
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def create_run(
        self,
        experiment_id: str,
        params: dict[str, Any],
        environment: dict[str, Any],
        artifact_uri: str,
        git_commit: str | None = None,
        git_dirty: bool | None = None,
        pipeline_id: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        tags: dict[str, Any] | None = None,
        system: dict[str, Any] | None = None,
        spec_hash: str | None = None,
    ) -> Run: ...

    def get_run(self, run_id: str) -> Run: ...

    def find_run(self, id_or_prefix: str) -> Run: ...

    def list_runs(
        self,
        experiment_id: str | None = None,
        status: RunStatus | None = None,
        pipeline_id: str | None = None,
        spec_hash: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[Run]: ...

    def search_runs(
        self,
        experiment_ids: Sequence[str] | None = None,
        filter: str | None = None,
        sort: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[Run]: ...

    def log_params(self, run_id: str, params: dict[str, Any]) -> None: ...

    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None: ...

    def set_system(self, run_id: str, values: dict[str, Any]) -> None: ...

    def set_data_version(self, run_id: str, data_version_id: str) -> None: ...

    def end_run(
        self, run_id: str, status: RunStatus, error: str | None = None,
        ended_at: datetime | None = None,
    ) -> Run: ...

    def reopen_run(self, run_id: str, job: str | None = None) -> Run: ...

    def heartbeat(self, run_id: str, device_hours: float = 0.0) -> None: ...

    def mark_crashed(self, heartbeat_before: datetime) -> list[Run]: ...


class MetricStore(Protocol):
    """Metric series of runs, and the latest values `Run.metrics`, filters and sorts read.

    - `log_metrics` appends points (any order; the series is read back by step, then
      timestamp, then insertion) and moves each key's latest value forward, in one unit of
      work. With a `batch_id` it is idempotent: a batch already stored for the run is skipped
      whole and False returned, so replaying a spilled batch never duplicates a point;
    - a key's latest value is its summary value when one was set (`set_summary_metrics`, a
      key given again is replaced), else its last logged point (highest step, then latest
      timestamp);
    - `delete_metrics_after(run_id, step, keys)` rewinds the series to the checkpoint a run
      resumes from: the points above `step` go (of the series in `keys` only, when given: a
      trainer rewinds its own series, never those other steps of the run logged), and each
      latest value taken from one of them falls back to the key's last point left; summaries
      stay. It returns how many points were deleted;
    - `get_metric_history` pages through a series (cursor: the last point's position); with
      `max_points` (>= 2, else `ValueError`) it returns the whole series downsampled to at most
      that many points (each bucket's minimum and maximum), in one page, and takes no cursor;
    - `metric_keys` lists a run's series names in order (cursor: the last name);
    - every method raises `NotFound` for an unknown run; an unknown key is an empty series.
      Nothing here raises `Conflict`;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def log_metrics(
        self, run_id: str, points: Sequence[MetricPoint], batch_id: str | None = None
    ) -> bool: ...

    def set_summary_metrics(self, run_id: str, metrics: dict[str, float]) -> None: ...

    def get_metric_history(
        self,
        run_id: str,
        key: str,
        max_points: int | None = None,
        limit: int = HISTORY_LIMIT,
        cursor: str | None = None,
    ) -> Page[MetricPoint]: ...

    def metric_keys(
        self, run_id: str, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[str]: ...

    def delete_metrics_after(self, run_id: str, step: int,
                             keys: Sequence[str] | None = None) -> int: ...


class CheckpointStore(Protocol):
    """Records of the checkpoints a run saved; storage holds the checkpoints themselves.

    - a record is keyed by (run, step): recording a step again (a resumed run saving it anew)
      overwrites uri, epoch, metrics and creation time and clears its deletion;
    - `mark_checkpoint_deleted` records that storage confirmed the deletion of the files; the
      record stays (the run's history still shows it) and a second call keeps the first time.
      `NotFound` when the run has no record at that step;
    - `list_checkpoints` orders by step (cursor: the last step); deleted ones only with
      `include_deleted`;
    - non-finite metric values read back as NaN; every method raises `NotFound` for an
      unknown run. Nothing here raises `Conflict`;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def record_checkpoint(
        self, run_id: str, step: int, uri: str, epoch: int | None = None,
        metrics: dict[str, float] | None = None,
    ) -> CheckpointRecord: ...

    def mark_checkpoint_deleted(self, run_id: str, step: int) -> None: ...

    def list_checkpoints(
        self,
        run_id: str,
        include_deleted: bool = False,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[CheckpointRecord]: ...
