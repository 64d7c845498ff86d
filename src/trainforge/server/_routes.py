"""The API's routes: experiments, their runs and a run (the seed's
`GET /api/v1/experiments/{experiment_id}/runs/{run_id}`), a model's versions and a version's
stage (the seed's `PUT /api/v1/models/{name}/versions/{version}/stage`), each with its
permission decision (`_auth`). Listings are keyset pages (`limit`, `cursor`); runs take the
`runs list` filter and sort language (`filter`, `sort`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request

from trainforge.errors import NotFound
from trainforge.registry import promote
from trainforge.server._auth import EDITOR, VIEWER
from trainforge.server._schemas import (
    ErrorAnswer,
    ExperimentOut,
    ExperimentPage,
    ModelVersionOut,
    ModelVersionPage,
    Refusal,
    RunOut,
    RunPage,
    StageChangeOut,
    StageRequest,
    WhoAmI,
)
from trainforge.server._tokens import Caller
from trainforge.session import Session

PREFIX = "/api/v1"
Limit = Annotated[int, Query(ge=1, le=1000, description="items per page")]
Cursor = Annotated[str | None, Query(description="the `next_cursor` of the page before")]
RunFilter = Annotated[str | None, Query(
    description="as `runs list --filter`: metrics.test_roc_auc > 0.9 and ...")]
RunSort = Annotated[str | None, Query(
    description="as `runs list --sort`: -metrics.test_roc_auc (descending)")]
Viewer = Annotated[Caller, Depends(VIEWER)]
Editor = Annotated[Caller, Depends(EDITOR)]


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


ROUTES = (
    ("GET", "/whoami", whoami),
    ("GET", "/experiments", list_experiments),
    ("GET", "/experiments/{experiment_id}", get_experiment),
    ("GET", "/experiments/{experiment_id}/runs", list_runs),
    ("GET", "/experiments/{experiment_id}/runs/{run_id}", get_run),
    ("GET", "/models/{name}/versions", list_model_versions),
    ("PUT", "/models/{name}/versions/{version}/stage", change_stage),
)


REFUSALS = {
    400: "a malformed filter, sort or cursor", 401: "no valid API token",
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
        app.add_api_route(PREFIX + path, endpoint, methods=[method], responses=responses)
