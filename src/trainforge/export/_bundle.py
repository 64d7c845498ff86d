"""What a served model needs besides its weights: the input contract and the training data
profile, both derived from a run's fitted feature pipeline, its golden set and its spec.

- The input contract is the spec's schema contract when the run had one (columns the feature
  pipeline reads but the contract leaves out are added; a contract file no longer on disk
  counts as none), else one derived from the golden
  set's column types; a column is nullable there when the golden set holds a null in it.
- The profile holds, per raw input column the model reads, the numeric range (`min`, `max`)
  or the categories it learned (`categories`: the one-hot's kept values; anything else is
  encoded as `__other__`). Ranges are the golden set's (the test split's) merged with any
  min-max transform's training range, until the data issue's stored profile replaces them.

Reading a run's bundle back (`read_golden_set`, `read_export_report`, `read_contract`) imports
neither torch nor the metrics: `trainforge predict` and `serve` start on these.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pandas.api import types as ptypes

from trainforge.errors import ArtifactError
from trainforge.export._report import REPORT_ARTIFACT, ExportReport
from trainforge.storage.artifacts import ArtifactStore
from trainforge.validate import ColumnRule, SchemaContract, load_contract

GOLDEN_SET_ARTIFACT = "evaluation/test.parquet"


def read_golden_set(artifacts: ArtifactStore, run_id: str) -> pd.DataFrame:
    """The run's golden set (its test split's raw records); ArtifactError naming the run."""
    try:
        data = artifacts.get_bytes(run_id, GOLDEN_SET_ARTIFACT)
    except ArtifactError as exc:
        raise ArtifactError(f"run {run_id}: no golden set {GOLDEN_SET_ARTIFACT} (runs "
                            f"evaluated before it was kept cannot be exported): {exc}") from None
    return pd.read_parquet(io.BytesIO(data))


def read_export_report(artifacts: ArtifactStore, run_id: str) -> ExportReport | None:
    """The run's export report, or None when it has not been exported."""
    if REPORT_ARTIFACT not in artifacts.list_names(run_id):
        return None
    return ExportReport.from_dict(json.loads(artifacts.get_bytes(run_id, REPORT_ARTIFACT)))


def input_columns(pipeline: Any) -> list[str]:
    """The raw columns a fitted feature pipeline reads, in first-use order."""
    from trainforge.features import compile_encoder

    return list(compile_encoder(pipeline).inputs)


def served_contract(pipeline: Any, golden: pd.DataFrame,
                    contract_file: str | None) -> SchemaContract:
    """The contract requests are validated against (see the module docstring)."""
    columns: dict[str, ColumnRule] = {}
    allow_extra = True
    if contract_file is not None and Path(contract_file).is_file():
        spec_contract = load_contract(contract_file)
        columns = dict(spec_contract.columns)
        allow_extra = spec_contract.allow_extra_columns
    for name in input_columns(pipeline):
        if name not in columns:
            if name not in golden.columns:
                raise ArtifactError(f"golden set: feature input column {name!r} is missing")
            columns[name] = _derived_rule(golden[name])
    return SchemaContract(columns=columns, allow_extra_columns=allow_extra)


def contract_yaml(contract: SchemaContract) -> bytes:
    return yaml.safe_dump(contract.model_dump(mode="json", exclude_none=True),
                          sort_keys=False).encode()


def read_contract(data: bytes) -> SchemaContract:
    return SchemaContract.model_validate(yaml.safe_load(data))


def training_profile(pipeline: Any, golden: pd.DataFrame) -> dict[str, Any]:
    """Per input column: `{"min", "max"}` for numbers, `{"categories"}` for one-hot inputs."""
    from trainforge.features import compile_encoder

    encoder = compile_encoder(pipeline)
    state = json.loads(pipeline.to_json())
    categories: dict[str, list[Any]] = {}
    ranges: dict[str, list[float]] = {}
    for item in state["transforms"]:
        if item["kind"] == "one_hot":
            for column in item["columns"]:
                categories.setdefault(column, list(item["state"]["categories"][column]))
        elif item["kind"] == "min_max":
            for column in item["columns"]:
                ranges[column] = [item["state"]["min"][column], item["state"]["max"][column]]
    columns: dict[str, dict[str, Any]] = {}
    for name in encoder.inputs:
        if name in categories:
            columns[name] = {"categories": categories[name]}
        elif name in encoder.numeric:
            columns[name] = _range(golden[name], ranges.get(name))
    return {"source": "feature pipeline and golden set", "columns": columns}


def _range(series: pd.Series, fitted: list[float] | None) -> dict[str, float]:
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=math.nan)
    finite = [float(v) for v in values if math.isfinite(v)] + list(fitted or [])
    if not finite:
        return {}
    return {"min": min(finite), "max": max(finite)}


def _derived_rule(series: pd.Series) -> ColumnRule:
    dtype = series.dtype
    if ptypes.is_bool_dtype(dtype):
        kind = "bool"
    elif ptypes.is_integer_dtype(dtype):
        kind = "int"
    elif ptypes.is_float_dtype(dtype):
        kind = "float"
    elif ptypes.is_datetime64_any_dtype(dtype):
        kind = "datetime"
    else:
        kind = "string"
    return ColumnRule(type=kind, nullable=bool(series.isna().any()))
