"""Exact order statistics of a column too large to hold: the value at rank k, found in two
passes in memory bounded by the sketch and a narrow bracket of values.

Pass 1 feeds a KLL quantile sketch (Apache DataSketches) and counts the values; the sketch's
rank error bounds, around each wanted rank, a value range that holds it. Pass 2 counts the
values below each range and keeps only those inside it (about 4 x the rank error x n values),
sorts them by (value, row) and picks the exact rank. A bracket that missed (the sketch's bound
holds with 99% confidence) is widened to the whole side and passed again. The answer is exact
and does not depend on the sketch's randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import datasketches as ds
import numpy as np

# Column chunks: values (any type ordered as float64 orders them, such as int64 times) and,
# where ties must be broken by position, each value's row number.
Chunks = Callable[[], Iterator[tuple[np.ndarray, np.ndarray | None]]]

KLL_K = 400


@dataclass(frozen=True)
class RankedValue:
    """The value at a rank and the row number it came from (-1 where rows were not given)."""

    value: float | int
    row: int


def select_ranks(chunks: Chunks,
                 ranks_of: Callable[[int], Sequence[int]]) -> tuple[int, list[RankedValue]]:
    """(n, the value at each rank `ranks_of(n)` names), n the number of values: rank 0 is the
    smallest by (value, row); ranks lie in 0 .. n-1. No values: (0, [])."""
    sketch = ds.kll_doubles_sketch(KLL_K)
    total = 0
    for values, _ in chunks():
        if len(values):
            sketch.update(values.astype(np.float64, copy=False))
            total += len(values)
    if total == 0:
        return 0, []
    error = sketch.normalized_rank_error(False)
    ranks = list(ranks_of(total))
    brackets = [_bracket(sketch, rank / total, 2 * error) for rank in ranks]
    answers = _second_pass(chunks, ranks, brackets)
    missed = [i for i, answer in enumerate(answers) if answer is None]
    if missed:
        wide = [(-np.inf, np.inf) for _ in missed]
        again = _second_pass(chunks, [ranks[i] for i in missed], wide)
        for i, answer in zip(missed, again, strict=True):
            answers[i] = answer
    return total, [answer for answer in answers if answer is not None]


def _bracket(sketch: ds.kll_doubles_sketch, quantile: float,
             error: float) -> tuple[float, float]:
    low = -np.inf if quantile - error <= 0 else sketch.get_quantile(quantile - error)
    high = np.inf if quantile + error >= 1 else sketch.get_quantile(quantile + error)
    return low, high


def _second_pass(chunks: Chunks, ranks: Sequence[int],
                 brackets: Sequence[tuple[float, float]]) -> list[RankedValue | None]:
    below = [0] * len(ranks)
    kept_values: list[list[np.ndarray]] = [[] for _ in ranks]
    kept_rows: list[list[np.ndarray]] = [[] for _ in ranks]
    for values, rows in chunks():
        as_float = values.astype(np.float64, copy=False)
        for i, (low, high) in enumerate(brackets):
            below[i] += int(np.count_nonzero(as_float < low))
            inside = (as_float >= low) & (as_float <= high)
            kept_values[i].append(values[inside])
            kept_rows[i].append(rows[inside] if rows is not None
                                else np.full(int(inside.sum()), -1, dtype=np.int64))
    answers: list[RankedValue | None] = []
    for i, rank in enumerate(ranks):
        values = np.concatenate(kept_values[i]) if kept_values[i] else np.array([])
        rows = np.concatenate(kept_rows[i]) if kept_rows[i] else np.array([], dtype=np.int64)
        within = rank - below[i]
        if not 0 <= within < len(values):
            answers.append(None)
            continue
        order = np.lexsort((rows, values))
        picked = order[within]
        answers.append(RankedValue(values[picked].item(), int(rows[picked])))
    return answers
