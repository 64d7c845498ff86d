"""Batch scoring of a Parquet file with a served version, streamed: record batches in,
prediction batches out, never the whole file in memory.

Output columns: `prediction`, then `probability` (binary) or `probability_<class>`
(multiclass), then `flags` (`field:flag` per value outside the training profile). The output
is written to a temporary file beside the target and renamed when complete; a record that
breaks the contract stops it with a `DataError` naming its row (from 1) and field, leaving
no output.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from trainforge.entities import ModelStage, ModelVersion
from trainforge.errors import DataError, NotFound
from trainforge.features import FeatureError
from trainforge.serving._model import ServedVersion
from trainforge.serving._router import stage_version
from trainforge.storage import RegistryStore

BATCH_ROWS = 8192


def resolve_version(store: RegistryStore, reference: str) -> ModelVersion:
    """`NAME`, `NAME@stage` or `NAME@version` to a model version (default: production)."""
    name, _, which = reference.partition("@")
    which = which or ModelStage.PRODUCTION.value
    if which.isdigit():
        return store.get_model_version(name, which)
    try:
        stage = ModelStage(which)
    except ValueError:
        stages = ", ".join(s.value for s in ModelStage)
        raise NotFound(f"{reference!r}: {which!r} is neither a version number nor a stage "
                       f"({stages})") from None
    found = stage_version(store, name, stage)
    if found is None:
        raise NotFound(f"model {name!r} has no version in stage {stage.value}")
    return found


def predict_file(served: ServedVersion, source: str | Path, target: str | Path, *,
                 batch_rows: int = BATCH_ROWS) -> int:
    """Score every row of Parquet file `source` into Parquet file `target`; returns the rows."""
    target = Path(target)
    temp = target.with_name(f".{target.name}.tmp")
    rows = 0
    writer: pq.ParquetWriter | None = None
    try:
        for batch in pq.ParquetFile(source).iter_batches(batch_size=batch_rows):
            table = _scored(served, batch.to_pylist(), rows)
            if writer is None:
                writer = pq.ParquetWriter(temp, table.schema)
            writer.write_table(table)
            rows += batch.num_rows
        if writer is None:
            writer = pq.ParquetWriter(temp, _schema(served))
        writer.close()
        writer = None
        os.replace(temp, target)
    finally:
        if writer is not None:
            writer.close()
        temp.unlink(missing_ok=True)
    return rows


def _scored(served: ServedVersion, records: list[dict[str, Any]], offset: int) -> pa.Table:
    problems = served.checker.problems(records)
    if problems:
        first = problems[0]
        row = offset + (first["record"] or 0) + 1
        raise DataError(f"row {row}: field {first['field']!r}: {first['error']}")
    try:
        scores = served.scorer(served.encoder.encode(records))
    except FeatureError as exc:
        raise DataError(f"row {offset + exc.record + 1}: field {exc.field!r}: "
                        f"{exc.reason}") from None
    columns = _score_columns(served, scores)
    flags = [[f"{f['field']}:{f['flag']}" for f in found]
             for found in served.checker.flags(records)]
    columns["flags"] = pa.array(flags, type=pa.list_(pa.string()))
    return pa.table(columns)


def _score_columns(served: ServedVersion, scores: np.ndarray) -> dict[str, Any]:
    answers = served.answers(scores)
    columns: dict[str, Any] = {"prediction": pa.array([a["prediction"] for a in answers])}
    if served.task == "binary":
        columns["probability"] = pa.array(scores, type=pa.float32())
    elif served.task == "multiclass":
        for index, name in enumerate(served.classes):
            columns[f"probability_{name}"] = pa.array(scores[:, index], type=pa.float32())
    return columns


def _schema(served: ServedVersion) -> pa.Schema:
    empty = np.zeros((0, len(served.classes)) if served.task == "multiclass" else 0,
                     dtype=np.float32)
    columns = _score_columns(served, empty)
    columns["flags"] = pa.array([], type=pa.list_(pa.string()))
    return pa.table(columns).schema
