"""Streaming: train on Parquet data larger than memory. Row groups as the unit of reading
(`RowGroupPlan`), a split decided row by row (`StreamSplit`), feature pipelines fitted in
passes (`fit_streaming`), and a loader that shards by rank and DataLoader worker, shuffles in
windows and resumes at any batch (`StreamingSource`, `StreamingBatches`).
"""

from __future__ import annotations

from trainforge.streaming._fit import fit_streaming
from trainforge.streaming._loader import DEFAULT_SHUFFLE_ROWS, StreamingBatches, StreamingSource
from trainforge.streaming._row_groups import RowGroup, RowGroupPlan
from trainforge.streaming._selection import RankedValue, select_ranks
from trainforge.streaming._split import TEST, TRAIN, VAL, StreamSplit, plan_split
from trainforge.streaming._targets import TargetEncoder

__all__ = [
    "DEFAULT_SHUFFLE_ROWS",
    "TEST",
    "TRAIN",
    "VAL",
    "RankedValue",
    "RowGroup",
    "RowGroupPlan",
    "StreamSplit",
    "StreamingBatches",
    "StreamingSource",
    "TargetEncoder",
    "fit_streaming",
    "plan_split",
    "select_ranks",
]
