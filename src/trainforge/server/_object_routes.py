"""The artifact proxy: the server's artifact root, object by object, for machines without
access of their own to it (`storage.objects.HttpObjectStore` is the client):

    GET    /api/v1/objects?prefix=P[&include_temporary=true]   {"objects": {key: size}}
    GET    /api/v1/objects/{key}                              the object's bytes, streamed
    PUT    /api/v1/objects/{key}                              the body stored, atomically
    DELETE /api/v1/objects/{key}                              the object removed (absent: fine)
    GET    /api/v1/objects-sizes/{key}                        {"size": bytes}
    DELETE /api/v1/objects-prefixes/{prefix}                  every object under the prefix

Each key goes through the one resolver of request paths (`_paths.artifact_name`) before the
object store checks it again; like the store's wire protocol, these routes are trainforge's
own client protocol (left out of the OpenAPI document) and need an editor's token.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response, StreamingResponse

from trainforge.config import ARTIFACT_PROXY_PATH
from trainforge.errors import NotFound, ObjectNotFound
from trainforge.server._auth import EDITOR
from trainforge.server._paths import artifact_name
from trainforge.server._streams import spooled_upload, streamed
from trainforge.storage.objects import ObjectStore

MAX_OBJECT_BYTES = 64 * 1024**3  # a checkpoint of a large model is one object
OBJECT_PATH = re.compile(re.escape(ARTIFACT_PROXY_PATH) + r"/.+")  # bodies of bytes, not JSON


def _objects(request: Request) -> ObjectStore:
    objects: ObjectStore = request.app.state.session.artifacts.objects
    return objects


def list_objects(request: Request, prefix: Annotated[str, Query()] = "",
                 include_temporary: bool = False) -> dict[str, Any]:
    key = artifact_name(prefix) if prefix else ""
    return {"objects": _objects(request).list(key, include_temporary=include_temporary)}


def get_object(request: Request, key: str) -> StreamingResponse:
    objects = _objects(request)
    name = artifact_name(key)
    try:
        source = objects.open(name)
    except ObjectNotFound:
        raise NotFound(f"no object {name!r}") from None
    return streamed(source)


async def put_object(request: Request, key: str) -> JSONResponse:
    objects = _objects(request)
    name = artifact_name(key)
    async with spooled_upload(request, MAX_OBJECT_BYTES, "an object") as (body, size):
        await run_in_threadpool(objects.write, name, body)
    return JSONResponse({"key": name, "size": size})


def delete_object(request: Request, key: str) -> Response:
    _objects(request).delete(artifact_name(key))
    return Response(status_code=204)


def object_size(request: Request, key: str) -> dict[str, int]:
    name = artifact_name(key)
    try:
        return {"size": _objects(request).size(name)}
    except ObjectNotFound:
        raise NotFound(f"no object {name!r}") from None


def delete_prefix(request: Request, prefix: str) -> Response:
    _objects(request).delete_prefix(artifact_name(prefix))
    return Response(status_code=204)


ROUTES = (
    ("GET", ARTIFACT_PROXY_PATH, list_objects),
    ("GET", ARTIFACT_PROXY_PATH + "/{key:path}", get_object),
    ("PUT", ARTIFACT_PROXY_PATH + "/{key:path}", put_object),
    ("DELETE", ARTIFACT_PROXY_PATH + "/{key:path}", delete_object),
    ("GET", ARTIFACT_PROXY_PATH + "-sizes/{key:path}", object_size),
    ("DELETE", ARTIFACT_PROXY_PATH + "-prefixes/{prefix:path}", delete_prefix),
)


def add_object_routes(app: FastAPI) -> None:
    """The proxy's routes, each an editor's."""
    for method, path, endpoint in ROUTES:
        app.add_api_route(path, endpoint, methods=[method], dependencies=[Depends(EDITOR)],
                          include_in_schema=False)
