"""User steps a test spec places in the standard chain (`steps:` with `uses:
chain_user_steps:...`)."""

from __future__ import annotations

from typing import Any

from trainforge.orchestration import StepContext, step


def count_rows(raw: Any, context: StepContext) -> int:
    """After validate: the rows that passed, recorded as a tag and a metric series of the
    pipeline's run (before training, whose series a resume rewinds: never this one)."""
    assert context.recorder is not None
    rows = len(raw.frame)
    context.recorder.set_tags({"rows_checked": rows})
    context.recorder.log_metrics({"rows_checked": float(rows)}, step=0)
    return rows


def summarise(evaluation: Any, row_count: int, context: StepContext,
              scale: float = 1.0) -> dict[str, float]:
    """After the gate: one figure from the evaluation and the count, as a summary metric."""
    assert context.recorder is not None
    figure = evaluation.metrics["roc_auc"] * row_count * scale
    context.recorder.set_summary({"auc_rows": figure})
    return {"figure": figure}


def needs_a_missing_value(nothing: Any) -> None:
    return None


def refuse(raw: Any) -> int:
    raise ValueError(f"refused {len(raw.frame)} rows")


@step(outputs=["positives"], after=["validate"])
def count_positives(raw: Any, context: StepContext) -> int:
    """A step declared in Python: the fraud rows that passed validation, as a tag and a metric
    series of the pipeline's run."""
    assert context.recorder is not None
    positives = int(raw.frame["is_fraud"].sum())
    context.recorder.set_tags({"positives": positives})
    context.recorder.log_metrics({"positives": float(positives)}, step=0)
    return positives
