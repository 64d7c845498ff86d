"""`trainforge export`, `trainforge serve` and `trainforge predict` over `trainforge.export` and
`trainforge.serving`.

Thin: each command resolves what it names in the store, calls the library and renders. An
unknown model, version or stage exits 1; so do a run without the artifacts export needs and a
file that breaks the model's input contract (naming the row and field); a bad option exits 2.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from trainforge.cli import _context, _extras, _render
from trainforge.errors import ArtifactError, DataError, ExportError, NotFound
from trainforge.storage import Store

if TYPE_CHECKING:
    from trainforge.entities import ModelVersion
    from trainforge.serving import ServedVersion
    from trainforge.storage.artifacts import ArtifactStore

ModelName = Annotated[str, typer.Argument(help="The registered model's name.")]
Runtime = Annotated[str, typer.Option(
    help="auto (onnxruntime where an accepted ONNX export exists, else torch), onnxruntime "
    "or torch.")]
RangeQuantiles = Annotated[tuple[float, float], typer.Option(
    help="Inputs outside the training data's values between these quantiles are flagged "
    "(0 1: its minimum and maximum, so no training row is flagged).")]


def _artifacts() -> ArtifactStore:
    from trainforge.storage.artifacts import open_artifact_store

    return open_artifact_store(_context.settings().artifact_root)


def export(
    name: ModelName,
    version: Annotated[str, typer.Argument(help="The version number to export.")],
    int8: Annotated[bool, typer.Option("--int8", help="Also a dynamic int8 ONNX variant.")] = False,
    torchscript: Annotated[bool, typer.Option(
        "--torchscript", help="Also TorchScript (torch.jit.trace; deprecated by torch).")] = False,
    int8_budget: Annotated[float, typer.Option(
        min=0.0, help="Largest task-metric drop an int8 variant may have.")] = 0.01,
    as_json: _render.JsonFlag = False,
) -> None:
    """Export version VERSION of model NAME as ONNX (and the variants asked), each checked
    on the run's golden set; the report is stored as the run's export/report.json."""
    _extras.require_extra("trainforge export", "export")
    from trainforge.export import export_model

    store = _context.existing_store()
    try:
        model_version = store.get_model_version(name, version)
        run = store.get_run(model_version.run_id)
        report = export_model(_artifacts(), run, int8=int8, torchscript=torchscript,
                              metric_budget=int8_budget)
    except (NotFound, ArtifactError, ExportError) as exc:
        _render.fail(str(exc), 1)
    rows = [[v.name, "accepted" if v.accepted else f"rejected: {v.reason}", v.exporter,
             v.max_abs_diff, v.metric_drop, v.latency_ms_p50, v.size_bytes]
            for v in report.variants]
    if as_json:
        _render.emit_json(report.to_dict())
        return
    _render.emit_table(f"Export of {name} version {version} ({report.rows} rows checked)",
                       ["variant", "decision", "exporter", "max_abs_diff",
                        f"{report.metric}_drop", "p50_ms_256_rows", "bytes"], rows,
                       empty="no variants")


def serve(
    name: ModelName,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8080,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    canary_share: Annotated[float, typer.Option(
        min=0.0, max=1.0, help="Share of requests the canary version answers.")] = 0.1,
    poll_interval: Annotated[float, typer.Option(
        min=0.1, help="Seconds between reads of the registry's stages.")] = 2.0,
    runtime: Runtime = "auto",
    range_quantiles: RangeQuantiles = (0.0, 1.0),
) -> None:
    """Serve model NAME's production version (and its canary) on POST /predict, following
    stage changes without a restart; /health, /metadata, /metrics beside it. Delivers the
    webhook outbox in a background thread while it serves."""
    _extras.require_extra("trainforge serve", "server")
    import uvicorn

    from trainforge.serving import VersionRouter, create_app

    _check_runtime(runtime)
    store = _context.existing_store()
    if not store.list_model_versions(name, limit=1).items:
        _render.fail(f"model {name!r} not found (see: trainforge models list)", 1)
    quantiles = _checked_quantiles(range_quantiles)
    router = VersionRouter(store, name, _loader(store, _artifacts(), runtime, quantiles),
                           canary_share=canary_share)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    app = create_app(router, poll_interval=poll_interval)
    with delivering(store):
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


def predict(
    model: Annotated[str, typer.Argument(
        metavar="MODEL[@STAGE|@VERSION]", help="A model name; default stage production.")],
    input_: Annotated[str, typer.Option("--input", help="Parquet file of raw records.")],
    output: Annotated[str, typer.Option(help="Parquet file to write predictions to.")],
    runtime: Runtime = "auto",
    range_quantiles: RangeQuantiles = (0.0, 1.0),
) -> None:
    """Score a Parquet file with a model version, streamed in record batches."""
    from trainforge.serving import predict_file, resolve_version

    _check_runtime(runtime)
    store = _context.existing_store()
    try:
        version = resolve_version(store, model)
        served = _loader(store, _artifacts(), runtime,
                         _checked_quantiles(range_quantiles))(version)
        rows = predict_file(served, input_, output)
    except (NotFound, ArtifactError, DataError, ExportError, OSError) as exc:
        _render.fail(f"{input_}: {exc}" if isinstance(exc, DataError) else str(exc), 1)
    typer.echo(f"{rows} rows scored by {version.model_name} version {version.version} "
               f"({served.runtime}) -> {output}")


@contextmanager
def delivering(store: Store) -> Iterator[threading.Thread]:
    """A deliverer loop (`trainforge.events.Deliverer.run`) in a background thread for as long
    as the block runs; the thread is stopped and joined when it ends."""
    from trainforge.events import Deliverer

    stop = threading.Event()
    thread = threading.Thread(target=Deliverer(store, os.environ).run, args=(stop,),
                              name="trainforge-deliverer", daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join()


def _check_runtime(runtime: str) -> None:
    if runtime not in ("auto", "onnxruntime", "torch"):
        _render.fail(f"--runtime: expected auto, onnxruntime or torch, got {runtime!r}", 2)


def _checked_quantiles(quantiles: tuple[float, float]) -> tuple[float, float]:
    low, high = quantiles
    if not 0.0 <= low < high <= 1.0:
        _render.fail(f"--range-quantiles: expected 0 <= LOW < HIGH <= 1, got {low:g} {high:g}", 2)
    return low, high


def _loader(store: Store, artifacts: ArtifactStore, runtime: str,
            quantiles: tuple[float, float]) -> Callable[[ModelVersion], ServedVersion]:
    """Loads a version of the store's registry for serving, its inputs flagged against the
    stored profile of the data version it trained on (when there is one)."""
    from trainforge.profiles import load_profile
    from trainforge.serving import load_served_version

    def load(version: ModelVersion) -> ServedVersion:
        profile = (load_profile(store, version.data_version_id)
                   if version.data_version_id is not None else None)
        return load_served_version(artifacts, version, store.get_run(version.run_id),
                                   runtime=runtime, data_profile=profile,
                                   range_quantiles=quantiles)
    return load
