"""Re-scoring: a stored model's test metrics measured again on another run's test split (the
golden set `evaluation/test.parquet`), so that a candidate and the production version are
compared on the same rows, never by the numbers each run stored.

Each model is scored with its own feature pipeline and its own recorded evaluation settings
(the decision threshold of a binary task); the targets are encoded by the candidate's data
spec and the scored model's classes.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

from trainforge.config import DataSpec, EvaluationSpec
from trainforge.errors import ArtifactError

if TYPE_CHECKING:
    import pandas as pd

    from trainforge.storage.artifacts import ArtifactStore
    from trainforge.train import StoredModel

GOLDEN_SET_ARTIFACT = "evaluation/test.parquet"


def load_golden_set(artifacts: ArtifactStore, run_id: str) -> pd.DataFrame:
    """The raw test records run `run_id` stored; `ArtifactError` naming the run when absent."""
    import pandas as pd

    try:
        data = artifacts.get_bytes(run_id, GOLDEN_SET_ARTIFACT)
    except ArtifactError:
        raise ArtifactError(f"run {run_id} stored no {GOLDEN_SET_ARTIFACT} (trained before the "
                            "evaluate step kept its test split): it cannot be re-scored") from None
    return pd.read_parquet(io.BytesIO(data))


def rescore(
    model: StoredModel, frame: pd.DataFrame, data: DataSpec, evaluation: EvaluationSpec
) -> dict[str, float]:
    """The test metrics (`test_roc_auc`, ...) of `model` on the raw records of `frame`."""
    from trainforge.evaluate import score_report

    if data.target not in frame.columns:
        raise ArtifactError(f"the test split has no target column {data.target!r}")
    targets = _targets(frame[data.target].to_numpy(), model.task, model.classes)
    scores = model.predict_scores(frame)
    return score_report(scores, targets, model.task, evaluation, "test").prefixed()


def _targets(values: np.ndarray, task: str, classes: tuple[object, ...]) -> np.ndarray:
    """Labels as the model was trained on them: 0/1 (binary: the second class is positive),
    class ids (multiclass), floats (regression)."""
    if task == "regression" or (task == "binary" and not classes):
        return values.astype(np.float32)
    if task == "binary":
        return (values.astype(object) == classes[1]).astype(np.float32)
    index = {label: i for i, label in enumerate(classes)}
    unknown = sorted({str(v) for v in values.tolist() if v not in index})[:5]
    if unknown:
        raise ArtifactError(f"the test split holds classes {unknown} the model does not know")
    return np.array([index[v] for v in values.tolist()], dtype=np.int64)
