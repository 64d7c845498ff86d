"""The standard training pipeline as a `Dag`: ingest → validate → split → features → train →
evaluate → gate → register."""

from __future__ import annotations

from functools import partial

from trainforge.config import PipelineSpec
from trainforge.orchestration import Dag, Step
from trainforge.pipeline import _steps


def build_training_dag(spec: PipelineSpec) -> Dag:
    """Bind each step to its spec section; the wiring is data (names in, names out)."""
    task = spec.model.task
    steps = (
        Step("ingest", partial(_steps.ingest, spec.data), ("run",), ("raw",)),
        Step("validate", partial(_steps.validate, spec.data), ("raw", "run"), ("validation",)),
        Step("split", partial(_steps.split, spec.data), ("raw", "validation"), ("splits",)),
        Step(
            "features",
            partial(_steps.features, spec.features, spec.data.target, task),
            ("splits", "run"),
            ("dataset",),
        ),
        Step("train", partial(_steps.train, spec), ("dataset", "run"), ("trained",)),
        Step(
            "evaluate",
            partial(_steps.evaluate, spec.evaluation, task),
            ("trained", "dataset", "run"),
            ("evaluation",),
        ),
        Step("gate", partial(_steps.gate, spec.evaluation), ("evaluation", "run"), ("gate",)),
        Step(
            "register",
            partial(_steps.register, spec.registry),
            ("trained", "evaluation", "gate", "run"),
            ("model_version",),
        ),
    )
    return Dag(name=spec.name, steps=steps, initial=("run",))
