"""The API's routes: experiments, their runs and a run (the seed's
`GET /api/v1/experiments/{experiment_id}/runs/{run_id}`), a model's versions and a version's
stage (the seed's `PUT /api/v1/models/{name}/versions/{version}/stage`), a model registered
from anywhere (the seed's `POST /api/v1/models/register`); and what a client logging a run
writes (a run, its params and tags, metric batches stored once per batch id, heartbeats, its
end) and reads back (its series, downsampled on request); a PBT study's lineage; pipelines
(the registered ones with their specs) and pipeline runs with their steps' attempts;
webhooks, their subscriptions and deliveries (an admin's). Each route has its permission
decision (`_auth`): viewers read, editors write. Listings are keyset pages (`limit`,
`cursor`); runs take the `runs list` filter and sort language (`filter`, `sort`)."""

from __future__ import annotations

import math
import re
import uuid
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from trainforge.entities import DataTag, DeliveryState, MetricPoint, PipelineRunStatus, RunStatus
from trainforge.errors import ArtifactError, NotFound, ObjectNotFound
from trainforge.registry import promote, register_version
from trainforge.server._auth import ADMIN, EDITOR, VIEWER
from trainforge.server._paths import artifact_name
from trainforge.server._schemas import (
    ArtifactList,
    ArtifactOut,
    BatchOut,
    DataVersionOut,
    DataVersionPage,
    DeliveryOut,
    DeliveryPage,
    DriftOut,
    EndRequest,
    ErrorAnswer,
    ExperimentOut,
    ExperimentPage,
    ExperimentRequest,
    KeyPage,
    LineageOut,
    MetricBatch,
    ModelVersionOut,
    ModelVersionPage,
    PipelineOut,
    PipelinePage,
    PipelineRunOut,
    PipelineRunPage,
    PointOut,
    PointPage,
    ProfileOut,
    Refusal,
    RegisterRequest,
    RunOut,
    RunPage,
    RunRequest,
    StageChangeOut,
    StageRequest,
    StudyDetail,
    StudyList,
    StudyOut,
    ValuesRequest,
    WebhookOut,
    WebhookPage,
    WebhookRequest,
    WhoAmI,
    json_safe,
)
from trainforge.server._streams import spooled_upload, streamed
from trainforge.server._tokens import Caller
from trainforge.session import Session
from trainforge.storage import DataVersionStore

if TYPE_CHECKING:
    from trainforge.profiles import DatasetProfile

PREFIX = "/api/v1"
MAX_ARTIFACT_BYTES = 1024**3  # an upload's limit; JSON bodies have theirs (`_app`)
UPLOAD_PATH = re.compile(rf"{PREFIX}/runs/[^/]+/artifacts/.+")  # bodies of bytes, not JSON
Limit = Annotated[int, Query(ge=1, le=1000, description="items per page")]
Cursor = Annotated[str | None, Query(description="the `next_cursor` of the page before")]
RunFilter = Annotated[str | None, Query(
    description="as `runs list --filter`: metrics.test_roc_auc > 0.9 and ...")]
RunSort = Annotated[str | None, Query(
    description="as `runs list --sort`: -metrics.test_roc_auc (descending)")]
Viewer = Annotated[Caller, Depends(VIEWER)]
Editor = Annotated[Caller, Depends(EDITOR)]
Admin = Annotated[Caller, Depends(ADMIN)]  # webhooks: their URLs may hold a receiver's key


def _session(request: Request) -> Session:
    session: Session = request.app.state.session
    return session


def whoami(caller: Viewer) -> WhoAmI:
    """The user the token acts for, the role it acts with and its id."""
    return WhoAmI(user=caller.user, role=caller.role.value, token_id=caller.token_id)


def list_experiments(request: Request, _: Viewer, limit: Limit = 100,
                     cursor: Cursor = None) -> ExperimentPage:
    """Experiments by name."""
    page = _session(request).store.list_experiments(limit=limit, cursor=cursor)
    return ExperimentPage(items=[ExperimentOut.of(e) for e in page.items],
                          next_cursor=page.next_cursor)


def get_experiment(request: Request, experiment_id: str, _: Viewer) -> ExperimentOut:
    return ExperimentOut.of(_session(request).store.get_experiment(experiment_id))


def list_runs(request: Request, experiment_id: str, _: Viewer, limit: Limit = 100,
              cursor: Cursor = None, filter: RunFilter = None, sort: RunSort = None) -> RunPage:
    """The runs of an experiment, newest first unless sorted."""
    store = _session(request).store
    store.get_experiment(experiment_id)
    page = store.search_runs([experiment_id], filter=filter, sort=sort, limit=limit,
                             cursor=cursor)
    return RunPage(items=[RunOut.of(r) for r in page.items], next_cursor=page.next_cursor)


def get_run(request: Request, experiment_id: str, run_id: str, _: Viewer) -> RunOut:
    """One run of an experiment (404 when it belongs to another)."""
    run = _session(request).store.get_run(run_id)
    if run.experiment_id != experiment_id:
        raise NotFound(f"run {run_id!r} not found in experiment {experiment_id!r}")
    return RunOut.of(run)


def list_model_versions(request: Request, name: str, _: Viewer, limit: Limit = 100,
                        cursor: Cursor = None) -> ModelVersionPage:
    """A model's versions by number."""
    page = _session(request).store.list_model_versions(name, limit=limit, cursor=cursor)
    return ModelVersionPage(items=[ModelVersionOut.of(v) for v in page.items],
                            next_cursor=page.next_cursor)


def change_stage(request: Request, name: str, version: str, body: StageRequest,
                 caller: Editor) -> StageChangeOut:
    """Move a version (a number, `production`, `canary` or an alias) to a stage through the
    gates its spec declares, as `trainforge models promote` does, recorded under the token's
    user; a refusal is 422 with the gate report, a move the stages do not allow 422, a
    concurrent change 409."""
    session = _session(request)
    done = promote(session.store, session.artifacts, name, version, body.stage,
                   reason=body.reason, force=body.force, user=caller.user)
    return StageChangeOut.of(done.change, done.replaced)


def register_model(request: Request, body: RegisterRequest, caller: Editor) -> ModelVersionOut:
    """Register the model at `artifact_uri` under the label `version` (the seed's request),
    through the gates of its run's spec when it is a run's artifact folder; a refusal is 422
    with the gate report, a label taken 409."""
    session = _session(request)
    version = register_version(session.store, session.artifacts, body.name, body.version,
                               body.artifact_uri, body.metrics, body.stage, user=caller.user)
    return ModelVersionOut.of(version)


def list_data_versions(request: Request, _: Viewer, limit: Limit = 100,
                       cursor: Cursor = None) -> DataVersionPage:
    """Data versions (content-addressed snapshots and the sources runs read), with their
    names."""
    store = _session(request).store
    page = store.list_data_versions(limit=limit, cursor=cursor)
    tags: dict[str, list[DataTag]] = {}
    for tag in store.list_data_tags():
        tags.setdefault(tag.data_version_id, []).append(tag)
    return DataVersionPage(items=[DataVersionOut.of(v, tags.get(v.data_version_id, []))
                                  for v in page.items], next_cursor=page.next_cursor)


def get_data_version(request: Request, ref: str, _: Viewer) -> DataVersionOut:
    """One data version with its files: by id, a unique id prefix of 6 or more characters, or
    NAME@TAG (NAME@3, NAME@latest)."""
    store = _session(request).store
    version = store.get_data_version(_data_version_id(store, ref))
    return DataVersionOut.of(version, store.list_data_tags(version.data_version_id),
                             files=True)


def get_data_profile(request: Request, ref: str, _: Viewer) -> ProfileOut:
    """The stored profile of a data version (`ref` as for one data version): 404 when it has
    none (`trainforge data profile` and every run store one)."""
    store = _session(request).store
    version_id = _data_version_id(store, ref)
    profile = _stored_profile(store, version_id, ref)
    summary = json_safe(profile.summary())
    return ProfileOut(data_version_id=version_id, rows=summary["rows"],
                      columns=summary["columns"])


def get_data_drift(request: Request, ref: str, _: Viewer,
                   against: Annotated[str, Query(description="the reference data version, "
                                                 "as `ref`")]) -> DriftOut:
    """The drift of data version `ref` from `against`, from their stored profiles alone (the
    server reads no data: a source is profiled where it is, by `trainforge data profile`)."""
    from trainforge.profiles import compute_drift

    store = _session(request).store
    reference_id = _data_version_id(store, against)
    current_id = _data_version_id(store, ref)
    report = compute_drift(_stored_profile(store, reference_id, against),
                           _stored_profile(store, current_id, ref)).to_dict()
    report = json_safe(report)
    return DriftOut(reference=reference_id, current=current_id, drifted=report["drifted"],
                    reference_rows=report["reference_rows"],
                    current_rows=report["current_rows"], schema_changes=report["schema"],
                    columns=report["columns"])


def _stored_profile(store: DataVersionStore, version_id: str, ref: str) -> DatasetProfile:
    from trainforge.profiles import load_profile

    profile = load_profile(store, version_id)
    if profile is None:
        raise NotFound(f"data version {ref!r} has no stored profile: profile it with "
                       "`trainforge data profile SOURCE` (runs profile what they read)")
    return profile


def _data_version_id(store: DataVersionStore, ref: str) -> str:
    if "@" in ref:
        name, _, tag = ref.partition("@")
        return store.get_data_tag(name, tag).data_version_id
    if len(ref) < 6:
        raise ValueError(f"data version {ref!r}: give at least 6 characters of its id, or "
                         "NAME@TAG")
    found = store.data_version_ids(ref)
    if len(found) != 1:
        raise NotFound(f"data version {ref!r}: " + ("no stored id starts so" if not found
                                                    else "more than one id starts so"))
    return found[0]


def list_pipelines(request: Request, _: Viewer, limit: Limit = 100, cursor: Cursor = None,
                   registered: Annotated[bool | None, Query(
                       description="true: only registered pipelines; false: only those "
                       "their runs recorded")] = None) -> PipelinePage:
    """Pipelines by id (`pipelines list`)."""
    from trainforge.pipeline import submission_keys

    page = _session(request).store.list_pipelines(registered, limit=limit, cursor=cursor)
    return PipelinePage(items=[PipelineOut.of(p, submission_keys(p), with_spec=False)
                               for p in page.items], next_cursor=page.next_cursor)


def get_pipeline(request: Request, pipeline_id: str, _: Viewer) -> PipelineOut:
    """One pipeline with its resolved spec (`pipelines show`); its runs are
    `/pipeline-runs?pipeline_id=`."""
    from trainforge.pipeline import submission_keys

    pipeline = _session(request).store.get_pipeline(pipeline_id)
    return PipelineOut.of(pipeline, submission_keys(pipeline), with_spec=True)


def list_pipeline_runs(request: Request, _: Viewer, limit: Limit = 100, cursor: Cursor = None,
                       pipeline_id: str | None = None,
                       status: PipelineRunStatus | None = None) -> PipelineRunPage:
    """Pipeline runs newest first, of one pipeline and in one status where given."""
    page = _session(request).store.list_pipeline_runs(pipeline_id, status, limit=limit,
                                                      cursor=cursor)
    return PipelineRunPage(items=[PipelineRunOut.of(r) for r in page.items],
                           next_cursor=page.next_cursor)


def get_pipeline_run(request: Request, pipeline_run_id: str, _: Viewer) -> PipelineRunOut:
    """One pipeline run with its steps' attempts (what `trainforge pipeline show` prints)."""
    store = _session(request).store
    run = store.get_pipeline_run(pipeline_run_id)
    return PipelineRunOut.of(run, store.list_step_runs(pipeline_run_id))


def list_studies(request: Request, _: Viewer) -> StudyList:
    """Every tuning study in the database."""
    tuning = _tuning()
    return StudyList(items=[StudyOut(**study)
                            for study in tuning.list_studies(_tuning_storage(request))])


def get_study(request: Request, name: str, _: Viewer) -> StudyDetail:
    """A study's trials, best trial, trials per state and parameter importances."""
    summary = _tuning().read_study(_tuning_storage(request), name, _session(request).store)
    return StudyDetail.model_validate(summary.to_json())


def _tuning() -> ModuleType:
    try:
        import optuna  # noqa: F401  (the `tune` extra; `trainforge.tuning` imports it lazily)
    except ImportError:
        raise HTTPException(501, "studies need the optional 'tune' dependencies: pip install "
                            "'trainforge[tune]'") from None
    import trainforge.tuning as tuning

    return tuning


def get_pbt_lineage(request: Request, run_id: str, _: Viewer) -> LineageOut:
    """The lineage of a population-based training study's run (`pbt show`): each interval's
    scores and hyperparameters, every exploit or why it was refused; 404 for a run that is
    no such study."""
    import json

    from trainforge.tuning import read_lineage

    session = _session(request)
    session.store.get_run(run_id)
    try:
        lineage = read_lineage(run_id, session.artifacts)
    except ArtifactError as exc:
        if isinstance(exc.__cause__, ObjectNotFound):
            raise NotFound(f"run {run_id!r} is no population-based training study: it "
                           "stored no lineage") from None
        raise
    return LineageOut.of(run_id, json.loads(lineage.to_json()))


def _tuning_storage(request: Request) -> Any:
    """Optuna's storage in the server's database, opened on first use."""
    state = request.app.state
    if getattr(state, "tuning_storage", None) is None:
        url = _session(request).settings.database_url.get_secret_value()
        state.tuning_storage = _tuning().open_storage(url)
    return state.tuning_storage


def create_experiment(request: Request, body: ExperimentRequest, _: Editor) -> ExperimentOut:
    """The experiment of that name, made if there is none (its description then set)."""
    store = _session(request).store
    return ExperimentOut.of(store.get_or_create_experiment(body.name, body.description))


def create_run(request: Request, experiment_id: str, body: RunRequest,
               _: Editor) -> RunOut:
    """A new running run of the experiment, its artifacts under the server's artifact root;
    its client keeps it alive with heartbeats and ends it."""
    session = _session(request)
    session.store.get_experiment(experiment_id)
    run_id = uuid.uuid4().hex
    return RunOut.of(session.store.create_run(
        experiment_id, body.params, {}, session.artifacts.run_uri(run_id), run_id=run_id,
        git_commit=body.git_commit, parent_run_id=body.parent_run_id, tags=body.tags))


def log_params(request: Request, run_id: str, body: ValuesRequest, _: Editor) -> RunOut:
    store = _session(request).store
    store.log_params(run_id, body.values)
    return RunOut.of(store.get_run(run_id))


def set_tags(request: Request, run_id: str, body: ValuesRequest, _: Editor) -> RunOut:
    store = _session(request).store
    store.set_tags(run_id, body.values)
    return RunOut.of(store.get_run(run_id))


def log_metrics(request: Request, run_id: str, body: MetricBatch, _: Editor) -> BatchOut:
    """Append the batch's points, once per batch id."""
    points = [MetricPoint(p.key, math.nan if p.value is None else p.value, p.step, p.timestamp)
              for p in body.points]
    return BatchOut(stored=_session(request).store.log_metrics(run_id, points, body.batch_id))


def list_metric_keys(request: Request, run_id: str, _: Viewer, limit: Limit = 100,
                     cursor: Cursor = None) -> KeyPage:
    """The names of a run's metric series."""
    page = _session(request).store.metric_keys(run_id, limit=limit, cursor=cursor)
    return KeyPage(items=list(page.items), next_cursor=page.next_cursor)


def metric_history(request: Request, run_id: str, key: str, _: Viewer,
                   max_points: Annotated[int | None, Query(
                       ge=2, le=100_000, description="the whole series in one page, at most "
                       "this many points: each bucket's minimum and maximum")] = None,
                   limit: Annotated[int, Query(ge=1, le=100_000)] = 10_000,
                   cursor: Cursor = None) -> PointPage:
    """A run's series by step (NaN as null)."""
    page = _session(request).store.get_metric_history(run_id, key, max_points=max_points,
                                                      limit=limit, cursor=cursor)
    return PointPage(items=[PointOut.of(p) for p in page.items], next_cursor=page.next_cursor)


def heartbeat(request: Request, run_id: str, _: Editor) -> None:
    """The run's client is alive (a run without heartbeats for a minute is taken as dead)."""
    _session(request).store.heartbeat(run_id)


def end_run(request: Request, run_id: str, body: EndRequest, _: Editor) -> RunOut:
    return RunOut.of(_session(request).store.end_run(run_id, RunStatus(body.status),
                                                     body.error))


def list_artifacts(request: Request, run_id: str, _: Viewer) -> ArtifactList:
    """The names of a run's artifacts, sorted."""
    session = _session(request)
    session.store.get_run(run_id)
    return ArtifactList(names=session.artifacts.list_names(run_id))


def get_artifact(request: Request, run_id: str, name: str, _: Viewer) -> StreamingResponse:
    """An artifact's bytes, streamed."""
    session = _session(request)
    key = artifact_name(name)
    session.store.get_run(run_id)
    try:
        source = session.artifacts.open(run_id, key)
    except ArtifactError as exc:
        if isinstance(exc.__cause__, ObjectNotFound):
            raise NotFound(f"run {run_id!r} has no artifact {key!r}") from None
        raise
    return streamed(source)


async def put_artifact(request: Request, run_id: str, name: str, _: Editor) -> ArtifactOut:
    """Store the body (`application/octet-stream`, at most `MAX_ARTIFACT_BYTES`) as the run's
    artifact `name`, atomically: a failed upload leaves no file of that name."""
    session = _session(request)
    key = artifact_name(name)
    await run_in_threadpool(session.store.get_run, run_id)
    async with spooled_upload(request, MAX_ARTIFACT_BYTES, "an artifact") as (body, size):
        await run_in_threadpool(session.artifacts.put_stream, run_id, key, body)
    return ArtifactOut(name=key, size=size)


def list_webhooks(request: Request, _: Admin, limit: Limit = 100,
                  cursor: Cursor = None) -> WebhookPage:
    """Every webhook subscription, oldest first."""
    page = _session(request).store.list_webhooks(limit=limit, cursor=cursor)
    return WebhookPage(items=[WebhookOut.of(h) for h in page.items],
                       next_cursor=page.next_cursor)


def add_webhook(request: Request, body: WebhookRequest, _: Admin) -> WebhookOut:
    """Subscribe `url` to `events` (what `webhooks add` does): 400 naming a URL that is not
    http(s) with a host, an unknown event or a malformed variable name."""
    from trainforge.events import subscribe

    return WebhookOut.of(subscribe(_session(request).store, body.url, body.events,
                                   body.secret_env))


def list_deliveries(request: Request, _: Admin, state: DeliveryState | None = None,
                    webhook_id: Annotated[int | None, Query(ge=1)] = None,
                    limit: Limit = 100, cursor: Cursor = None) -> DeliveryPage:
    """Each event's delivery to each webhook, newest first (`webhooks outbox`)."""
    page = _session(request).store.list_event_deliveries(state, webhook_id, limit=limit,
                                                         cursor=cursor)
    return DeliveryPage(items=[DeliveryOut.of(d) for d in page.items],
                        next_cursor=page.next_cursor)


def redeliver(request: Request, delivery_id: int, _: Admin) -> DeliveryOut:
    """Send a delivery again (`webhooks redeliver`): pending at once, with a new round of
    retries; 404 for none, 409 for one that is pending already."""
    from datetime import datetime, timezone

    store = _session(request).store
    return DeliveryOut.of(store.redeliver(delivery_id, datetime.now(timezone.utc)))


ROUTES = (
    ("GET", "/whoami", whoami),
    ("GET", "/experiments", list_experiments),
    ("GET", "/experiments/{experiment_id}", get_experiment),
    ("GET", "/experiments/{experiment_id}/runs", list_runs),
    ("GET", "/experiments/{experiment_id}/runs/{run_id}", get_run),
    ("GET", "/models/{name}/versions", list_model_versions),
    ("PUT", "/models/{name}/versions/{version}/stage", change_stage),
    ("POST", "/models/register", register_model),
    ("GET", "/data/versions", list_data_versions),
    ("GET", "/data/versions/{ref}", get_data_version),
    ("GET", "/data/versions/{ref}/profile", get_data_profile),
    ("GET", "/data/versions/{ref}/drift", get_data_drift),
    ("GET", "/pipelines", list_pipelines),
    ("GET", "/pipelines/{pipeline_id}", get_pipeline),
    ("GET", "/pipeline-runs", list_pipeline_runs),
    ("GET", "/pipeline-runs/{pipeline_run_id}", get_pipeline_run),
    ("GET", "/studies", list_studies),
    ("GET", "/studies/{name}", get_study),
    ("GET", "/runs/{run_id}/pbt-lineage", get_pbt_lineage),
    ("POST", "/experiments", create_experiment),
    ("POST", "/experiments/{experiment_id}/runs", create_run),
    ("PUT", "/runs/{run_id}/params", log_params),
    ("PUT", "/runs/{run_id}/tags", set_tags),
    ("POST", "/runs/{run_id}/metrics", log_metrics),
    ("GET", "/runs/{run_id}/metrics", list_metric_keys),
    ("GET", "/runs/{run_id}/metrics/{key:path}", metric_history),
    ("POST", "/runs/{run_id}/heartbeat", heartbeat),
    ("POST", "/runs/{run_id}/end", end_run),
    ("GET", "/runs/{run_id}/artifacts", list_artifacts),
    ("GET", "/runs/{run_id}/artifacts/{name:path}", get_artifact),
    ("PUT", "/runs/{run_id}/artifacts/{name:path}", put_artifact),
    ("GET", "/webhooks", list_webhooks),
    ("POST", "/webhooks", add_webhook),
    ("GET", "/webhooks/deliveries", list_deliveries),
    ("POST", "/webhooks/deliveries/{delivery_id}/redeliver", redeliver),
)


REFUSALS = {
    400: "a malformed filter, sort or cursor", 401: "no valid API token",
    501: "an optional dependency the route needs is not installed",
    403: "the token's role is below the route's", 404: "what the path names does not exist",
    409: "another change came first", 422: "the request breaks its schema, or a promotion "
    "was refused (then with each gate's result)", 429: "too many failed token attempts",
}
BODY_REFUSALS = {411: "a body without its Content-Length", 413: "a body over the limit",
                 415: "a body that is not JSON"}


def add_api_routes(app: FastAPI) -> None:
    """Every route of the API on `app` itself (not an included router, whose routes the
    permission check could not see: it refuses them), each with every refusal it may answer
    documented."""
    for method, path, endpoint in ROUTES:
        refusals = {**REFUSALS, **(BODY_REFUSALS if method in ("POST", "PUT") else {})}
        responses: dict[int | str, dict[str, Any]] = {
            status: {"model": Refusal if status == 422 else ErrorAnswer, "description": why}
            for status, why in refusals.items()}
        if endpoint is get_artifact:
            responses[200] = {"content": {"application/octet-stream": {}},
                              "description": "the artifact's bytes"}
        if endpoint is put_artifact:
            responses[413]["description"] = f"a body over {MAX_ARTIFACT_BYTES} bytes"
        status = 204 if endpoint is heartbeat else 200
        app.add_api_route(PREFIX + path, endpoint, methods=[method], responses=responses,
                          status_code=status, response_class=StreamingResponse
                          if endpoint is get_artifact else JSONResponse)
