"""A small Parquet source in several files and row groups, for the streaming tests."""

from pathlib import Path

import numpy as np
import pandas as pd

from trainforge.config import FeaturesSpec, SplitSpec
from trainforge.features import FeaturePipeline
from trainforge.ingest import list_source_files
from trainforge.streaming import (
    RowGroupPlan,
    StreamingSource,
    TargetEncoder,
    fit_streaming,
    plan_split,
)

FEATURES = FeaturesSpec(transforms=[
    {"type": "impute", "columns": ["amount"], "strategy": "median"},
    {"type": "standardize", "columns": ["amount", "age"]},
    {"type": "one_hot", "columns": ["country"], "max_categories": 3},
])


def frame(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    amount = rng.lognormal(3, 1, rows)
    amount[rng.random(rows) < 0.05] = np.nan
    return pd.DataFrame({
        "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 86_400 * 30, rows),
                                                           unit="s"),
        "amount": amount,
        "age": rng.integers(18, 90, rows).astype(np.int64),
        "country": rng.choice(["DE", "FR", "US", "ES", "IT"], rows),
        "label": (rng.random(rows) < 0.3).astype(np.int64),
    })


def write_source(folder: Path, files: int = 3, rows: int = 1_000, row_group: int = 170) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        frame(rows, seed=index).to_parquet(folder / f"part-{index}.parquet",
                                           row_group_size=row_group, index=False)
    return folder


def streaming_source(folder: Path, split: SplitSpec | None = None,
                     shuffle_rows: int = 300) -> StreamingSource:
    plan = RowGroupPlan.from_listing(list_source_files(str(folder)))
    stream_split = plan_split(plan, split or SplitSpec(method="time", time_column="ts"))

    def frames(columns):
        for group in range(len(plan.groups)):
            table = plan.read(group, [*columns, *stream_split.columns])
            keep = stream_split.parts(group, table) == 0
            yield table.to_pandas()[keep].reset_index(drop=True)

    pipeline = fit_streaming(FeaturePipeline.from_spec(FEATURES), frames)
    return StreamingSource(stream_split, pipeline, TargetEncoder("label", "binary"),
                           shuffle_rows=shuffle_rows)
