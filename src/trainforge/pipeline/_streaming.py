"""The data steps of the pipeline with `data.streaming: true`: the same outputs as the in-memory
steps (`_steps.py`), made without ever holding the training rows.

- `ingest` lists the Parquet row groups (footers only) and hashes the files: the data version;
- `validate` runs the contract over every row group (`on_fail` error or warn);
- `split` decides each row's part from its key (`trainforge.streaming.plan_split`) and reads
  the validation and test rows into memory (every column: the test rows are the golden set);
- `features` fits the feature pipeline in passes over the training rows, learns the target's
  classes, encodes the validation and test rows, and hands the trainer a `StreamingSource` of
  the training rows in place of arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from trainforge.config import DataSpec, FeaturesSpec
from trainforge.entities import DataVersion
from trainforge.errors import DataError
from trainforge.features import FeaturePipeline, select_features
from trainforge.ingest import (
    SourceFile,
    content_id,
    data_version_of,
    file_sha256,
    list_source_files,
)
from trainforge.pipeline._alerts import Alert
from trainforge.pipeline._dataset import Dataset, binary_classes, encode_classes
from trainforge.pipeline._steps import (
    check_read,
    data_to_read,
    record_features,
    record_validation,
)
from trainforge.split import Splits
from trainforge.streaming import (
    TEST,
    TRAIN,
    VAL,
    RowGroupPlan,
    StreamingSource,
    StreamSplit,
    TargetEncoder,
    fit_streaming,
    plan_split,
)
from trainforge.tracking import RunRecorder
from trainforge.validate import ContractChecker, enforce, load_contract
from trainforge.versioning import DataRepository


@dataclass(frozen=True, eq=False)
class StreamedData:
    """The files of a streamed source, their row groups, and the version they make."""

    plan: RowGroupPlan
    files: tuple[SourceFile, ...]
    source: str

    @property
    def fingerprint(self) -> str:
        return content_id((f.name, f.sha256) for f in self.files)

    def data_version(self) -> DataVersion:
        return data_version_of(self.files, self.source)


@dataclass(frozen=True, eq=False)
class StreamedSplits(Splits):
    """`Splits` whose train part stays in the source: `train` holds its columns and no row;
    `stream` decides every row's part."""

    stream: StreamSplit | None = None


def ingest(spec: DataSpec, data: DataRepository | None, name: str,
           run: RunRecorder) -> dict[str, Any]:
    """The source's row groups (or those of the pinned `data.version`), and its version: the
    source snapshotted first under `name` (`data.snapshot`)."""
    cache = data.hash_cache if data is not None else None
    to_read = data_to_read(spec, name, data)
    listing = list_source_files(to_read.location, spec.format, to_read.options)
    plan = RowGroupPlan.from_listing(listing)
    rows: dict[str, int] = {}
    for group in plan.groups:
        rows[group.file.path] = rows.get(group.file.path, 0) + group.rows
    files = tuple(
        SourceFile(f.path, f.name, *file_sha256(listing.fs, f.path, cache), rows.get(f.path, 0),
                   f.format, f.compression)
        for f in listing.files)
    streamed = StreamedData(plan, files, spec.source)
    check_read(streamed.fingerprint, to_read)
    if plan.total_rows == 0:
        raise DataError(f"{spec.source}: contains no rows ({len(files)} file(s) read)")
    run.set_data_version(streamed.data_version())
    run.set_tags({"data": {"fingerprint": streamed.fingerprint, "files": len(files),
                           "rows": plan.total_rows, "streaming": True,
                           "row_groups": len(plan.groups), **to_read.tags()}})
    return {"read": streamed}


def validate(spec: DataSpec, alert: Alert | None, read: StreamedData,
             run: RunRecorder) -> dict[str, Any]:
    """The contract over every row group (when the spec names one); its report recorded, a
    broken one announced through `alert`."""
    report = None
    if spec.contract is not None:
        checker = ContractChecker(load_contract(spec.contract))
        plan = read.plan
        for index, group in enumerate(plan.groups):
            table = plan.read(index, plan.schema.names)
            for batch in table.to_batches():
                checker.update(batch, group.locate)
        report = checker.finish()
        try:
            enforce(report, spec.on_fail, read.source, contract_file=spec.contract)
        finally:
            record_validation(run, report, read.source, read.fingerprint, alert)
    return {"validation": report, "raw": read}


def split(spec: DataSpec, raw: StreamedData, validation: Any) -> dict[str, Any]:
    """Each row's part (module docstring); the validation and test rows read into memory."""
    stream = plan_split(raw.plan, spec.split)
    val, val_places = _read_part(stream, VAL, raw.plan.schema.names)
    test, test_places = _read_part(stream, TEST, raw.plan.schema.names)
    train = val.iloc[:0]
    return {"splits": StreamedSplits(train, val, test, (np.zeros(0, np.int64), val_places,
                                                        test_places), stream=stream)}


def features(spec: FeaturesSpec, data: DataSpec, task: str, raw: StreamedData,
             splits: StreamedSplits, run: RunRecorder) -> dict[str, Any]:
    """Fit the features on the streamed training rows; encode validation and test in memory;
    the training rows become a `StreamingSource`."""
    stream = splits.stream
    assert stream is not None
    selection = select_features(spec, splits.val, data.reserved_columns)
    frames = _train_frames(stream)
    pipeline = fit_streaming(FeaturePipeline.from_spec(selection.spec), frames)
    record_features(run, pipeline, selection.unused)
    target = TargetEncoder(data.target, task, _classes(frames, data, task, splits))
    source = StreamingSource(stream, pipeline, target, TRAIN, data.shuffle_rows)
    places = splits.positions
    matrices, targets = [], []
    for part, where in ((splits.val, places[1]), (splits.test, places[2])):
        locate = _locator(raw.plan, where)
        matrices.append(pipeline.transform(part, locate))
        targets.append(target.encode(part[data.target], locate))
    dataset = Dataset(train=source, val=(matrices[0], targets[0]),
                      test=(matrices[1], targets[1]),
                      feature_names=tuple(pipeline.feature_names), classes=target.classes)
    return {"dataset": dataset, "feature_pipeline": pipeline}


def _train_frames(stream: StreamSplit) -> Callable[[Sequence[str]], Iterator[pd.DataFrame]]:
    def frames(columns: Sequence[str]) -> Iterator[pd.DataFrame]:
        wanted = list(dict.fromkeys([*columns, *stream.columns]))
        for group in range(len(stream.plan.groups)):
            if not stream.counts[group, TRAIN]:
                continue
            table = stream.plan.read(group, wanted)
            keep = stream.parts(group, table) == TRAIN
            yield table.filter(pa.array(keep)).to_pandas()
    return frames


def _classes(frames: Callable[[Sequence[str]], Iterator[pd.DataFrame]], data: DataSpec,
             task: str, splits: StreamedSplits) -> tuple[object, ...]:
    """The target's classes as `encode_targets` learns them: binary from the values of every
    part, multiclass from the training part's sorted labels (others must occur in it)."""
    if task == "regression":
        return ()
    seen: dict[Any, None] = {}
    for frame in frames([data.target]):
        seen.update(dict.fromkeys(frame[data.target].dropna().unique().tolist()))
    if task == "multiclass":
        others = [splits.val[data.target].to_numpy(), splits.test[data.target].to_numpy()]
        classes, _ = encode_classes(np.array(list(seen), dtype=object), others)
        return classes
    for part in (splits.val, splits.test):
        seen.update(dict.fromkeys(part[data.target].dropna().unique().tolist()))
    return binary_classes(pd.Series(list(seen), dtype=object), data.positive_label)


def _read_part(stream: StreamSplit, part: int,
               columns: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """Every column of the part's rows, and each row's position in the whole source."""
    tables, positions = [], []
    for group in range(len(stream.plan.groups)):
        if not stream.counts[group, part]:
            continue
        table = stream.plan.read(group, columns)
        keep = np.flatnonzero(stream.parts(group, table) == part)
        tables.append(table.take(pa.array(keep)))
        positions.append(stream.starts[group] + keep)
    frame = pa.concat_tables(tables).to_pandas()
    return frame, np.concatenate(positions).astype(np.int64)


def _locator(plan: RowGroupPlan, positions: np.ndarray) -> Callable[[int], str]:
    """Where row i of a part (held at source position `positions[i]`) lies in its file."""
    starts = np.cumsum(plan.rows) - plan.rows

    def locate(row: int) -> str:
        position = int(positions[row])
        group = int(np.searchsorted(starts, position, side="right")) - 1
        return plan.groups[group].locate(position - int(starts[group]))

    return locate

