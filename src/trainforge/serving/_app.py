"""The predict app (FastAPI): `/predict`, `/health`, `/metadata`, `/metrics` over a
`VersionRouter`.

Rules:
- `POST /predict` takes a JSON list of raw records, sent as `Content-Type: application/json`.
  Every refusal is `{"detail": [{record, field, error}]}` (`record`: the index in the list, from
  0; null with `field` where the body is at fault): no production version 503, another media
  type 415, a body over `max_body_bytes` 413, a body that is not JSON (or nests too deep) 400,
  a body that is not a non-empty list of objects or records that break the contract or the
  encoder's limits 422. A client error logs nothing; only a fault of the served model is 500,
  logged. Every error leaves the server answering.
- The answer names the model, version and role (production or canary) that answered, one
  prediction per record with its `flags`, and `flagged`, the number of flagged records.
- An `X-Request-ID` header routes by its hash (sticky); without it, by a seeded draw.
- The request path is a plain Starlette route: it parses with the standard library's json,
  checks with plain Python and encodes with the served encoder: no pydantic model per record.
- The OpenAPI document (`/openapi.json`) describes `/predict` from the production version's
  contract (`serving._openapi`), rebuilt when the served versions change.
- `/metrics` (Prometheus text) counts requests, records, errors and flagged inputs, and
  times requests, each labelled by version; the app owns its registry of metrics.
- The app's lifespan starts the router's poll thread and stops it on shutdown.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

from trainforge.features import FeatureError
from trainforge.serving._openapi import HealthAnswer, MetadataAnswer, predict_operation
from trainforge.serving._router import VersionRouter

log = logging.getLogger("trainforge")
MAX_BODY_BYTES = 10 * 1024 * 1024
NO_VERSION = "none"  # the version label of errors answered before a version is chosen
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("trainforge_predict_requests", "Answered /predict requests",
                                ["version", "role"], registry=self.registry)
        self.records = Counter("trainforge_predict_records", "Records scored",
                               ["version"], registry=self.registry)
        self.errors = Counter("trainforge_predict_errors", "Refused /predict requests",
                              ["version", "status"], registry=self.registry)
        self.flagged = Counter("trainforge_predict_flagged_inputs",
                               "Input values outside the training profile",
                               ["version", "field", "flag"], registry=self.registry)
        self.latency = Histogram("trainforge_predict_latency_seconds",
                                 "Time to answer /predict", ["version"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)


def create_app(router: VersionRouter, *, poll_interval: float = 2.0,
               max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The app serving `router`'s versions; it refreshes them at start and every
    `poll_interval` seconds while it runs."""
    metrics = _Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        router.refresh()
        stop = threading.Event()
        poller = threading.Thread(target=router.poll, args=(stop, poll_interval),
                                  name="trainforge-serving-poll", daemon=True)
        poller.start()
        yield
        stop.set()
        poller.join()

    app = FastAPI(title=f"trainforge serving {router.model_name}", lifespan=lifespan,
                  description=f"Scores raw records with model {router.model_name!r}: its "
                              f"production version, and its canary for a share of requests.")

    async def predict(request: Request) -> Response:
        start = time.perf_counter()
        # refused before a version is chosen: counted under no version's label
        media_type = request.headers.get("content-type", "")
        if media_type.partition(";")[0].strip().lower() != "application/json":
            metrics.errors.labels(NO_VERSION, "415").inc()
            return _error(415, f"expected Content-Type application/json, got "
                               f"{media_type or 'none'}")
        body = await _read_body(request, max_body_bytes)
        if body is None:
            metrics.errors.labels(NO_VERSION, "413").inc()
            return _error(413, f"request body over {max_body_bytes} bytes")
        try:
            records = json.loads(body)
        except (ValueError, RecursionError) as exc:
            metrics.errors.labels(NO_VERSION, "400").inc()
            return _error(400, f"body is not valid JSON: {exc}")
        chosen = router.choose(request.headers.get("x-request-id"))
        if chosen is None:
            metrics.errors.labels(NO_VERSION, "503").inc()
            return _error(503, f"no production version of model {router.model_name!r}")
        served, role = chosen
        label = served.label
        problems = served.checker.problems(records)
        if problems:
            metrics.errors.labels(label, "422").inc()
            return _json(422, {"detail": problems})
        try:
            predictions = served.predict(records)
            flagged = sum(1 for prediction in predictions if prediction["flags"])
            answer = _json(200, {"model": router.model_name, "version": label, "role": role,
                                 "predictions": predictions, "flagged": flagged})
        except FeatureError as exc:
            metrics.errors.labels(label, "422").inc()
            return _json(422, {"detail": [{"record": exc.record, "field": exc.field,
                                           "error": exc.reason}]})
        except Exception:  # a fault of the served model (a NaN score too): counted, logged, 500
            log.exception("serving %s version %s failed", router.model_name, label)
            metrics.errors.labels(label, "500").inc()
            return _error(500, f"version {label} failed to score the records (see the log)")
        _count_flags(metrics, label, predictions)
        metrics.requests.labels(label, role).inc()
        metrics.records.labels(label).inc(len(predictions))
        metrics.latency.labels(label).observe(time.perf_counter() - start)
        return answer

    app.add_route("/predict", predict, methods=["POST"])  # a plain Starlette route: no
    # FastAPI parameter machinery on the hot path

    @app.get("/health", response_model=HealthAnswer,
             responses={503: {"model": HealthAnswer, "description": "No production version"}})
    def health() -> Response:
        served = router.served
        versions = {"production": served.production.label if served.production else None,
                    "canary": served.canary.label if served.canary else None}
        status = 200 if served.production is not None else 503
        return _json(status, {"status": "ok" if status == 200 else "no production version",
                              "model": router.model_name, "versions": versions})

    @app.get("/metadata", response_model=MetadataAnswer)
    def metadata() -> dict[str, Any]:
        served = router.served
        return {"model": router.model_name, "canary_share": router.canary_share,
                "production": served.production.metadata if served.production else None,
                "canary": served.canary.metadata if served.canary else None}

    @app.get("/metrics", response_class=PlainTextResponse, responses={200: {
        "description": "Prometheus text exposition format",
        "content": {"text/plain": {"schema": {"type": "string"}}}}})
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    documents: dict[tuple[str | None, str | None], dict[str, Any]] = {}

    def openapi() -> dict[str, Any]:
        served = router.served
        key = (served.production.label if served.production else None,
               served.canary.label if served.canary else None)
        if key not in documents:
            document = get_openapi(title=app.title, version=app.version, routes=app.routes,
                                   description=app.description)
            document["paths"]["/predict"] = predict_operation(served.production, served.canary)
            documents.clear()
            documents[key] = document
        return documents[key]

    app.openapi = openapi  # type: ignore[method-assign]
    return app


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None once it is known to exceed `limit` (read no further)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _count_flags(metrics: _Metrics, label: str, predictions: list[dict[str, Any]]) -> None:
    for prediction in predictions:
        for flag in prediction["flags"]:
            metrics.flagged.labels(label, flag["field"], flag["flag"]).inc()


def _error(status: int, message: str) -> Response:
    return _json(status, {"detail": [{"record": None, "field": None, "error": message}]})


def _json(status: int, payload: dict[str, Any]) -> Response:
    """JSON as the standard says: ASCII-escaped (a field name may be a lone surrogate) and
    never NaN or Infinity."""
    return Response(json.dumps(payload, allow_nan=False), status, media_type="application/json")
