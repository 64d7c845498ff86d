"""The standard training pipeline as a `Dag`: ingest → validate → (profile, drift) → split →
features → train → evaluate → (cross_validate, with `evaluation.cross_validation`) → gate →
register."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from trainforge.config import PipelineSpec
from trainforge.orchestration import Dag, Step
from trainforge.pipeline import _data_quality, _steps, _streaming
from trainforge.pipeline._alerts import Alert
from trainforge.storage.contracts import RegistryStore
from trainforge.train import Callback, PreemptionNotice
from trainforge.versioning import DataRepository


def build_training_dag(
    spec: PipelineSpec, registry: RegistryStore | None, callbacks: Sequence[Callback] = (),
    preemption: PreemptionNotice | None = None, data: DataRepository | None = None,
    alert: Alert | None = None, quality: bool = True,
) -> Dag:
    """Bind each step to its spec section and services; the wiring is data (names in, names
    out). `registry` receives the model versions (None: a DAG that never registers, such as a
    non-reporting rank's); `callbacks` join the trainer's (a tuning trial's pruning);
    `preemption` is the notice the entry point installs (None: signals do not stop training);
    `data` hashes the files read (once per unchanged file) and reads pinned data versions;
    `alert` announces data that breaks its contract (a log line and the webhooks); `quality`
    False leaves out the profile and drift steps (a non-reporting rank's DAG)."""
    task = spec.model.task
    reading, preparing = _data_steps(spec, data, alert)
    steps = (
        *reading,
        *([Step("profile", partial(_data_quality.profile, data), ("read", "run"),
                ("profile",))] if quality and spec.data.profile else []),
        *([Step("drift", partial(_data_quality.drift, spec.data, spec.registry, data, registry,
                                 alert), ("read", "profile", "run"), ("drift",))]
          if quality and spec.data.drift is not None else []),
        *preparing,
        Step("train", partial(_steps.train, spec, tuple(callbacks), preemption),
             ("dataset", "run"), ("trained",)),
        Step(
            "evaluate",
            partial(_steps.evaluate, spec.evaluation, task),
            ("trained", "dataset", "splits", "run"),
            ("evaluation",),
        ),
        *([Step("cross_validate", partial(_steps.cross_validate, spec),
                ("splits", "dataset", "run"), ("cross_validation",))]
          if spec.evaluation.cross_validation else []),
        Step("gate", partial(_steps.gate, spec.evaluation), ("trained", "evaluation", "run"),
             ("gate",)),
        Step(
            "register",
            partial(_steps.register, spec.registry, registry),
            ("trained", "evaluation", "gate", "splits", "feature_pipeline", "run"),
            ("model_version",),
        ),
    )
    return Dag(name=spec.name, steps=steps, initial=("run",))


def _data_steps(spec: PipelineSpec, data: DataRepository | None,
                alert: Alert | None) -> tuple[tuple[Step, ...], tuple[Step, ...]]:
    """(ingest and validate, split and features): the in-memory steps, or with
    `data.streaming` those that never hold the training rows (`_streaming.py`)."""
    task = spec.model.task
    if spec.data.streaming:
        return (
            (Step("ingest", partial(_streaming.ingest, spec.data, data), ("run",), ("read",)),
             Step("validate", partial(_streaming.validate, spec.data, alert), ("read", "run"),
                  ("validation", "raw"))),
            (Step("split", partial(_streaming.split, spec.data), ("raw", "validation"),
                  ("splits",)),
             Step("features", partial(_streaming.features, spec.features, spec.data, task),
                  ("raw", "splits", "run"), ("dataset", "feature_pipeline"))),
        )
    return (
        (Step("ingest", partial(_steps.ingest, spec.data, data), ("run",), ("read",)),
         Step("validate", partial(_steps.validate, spec.data, task, alert), ("read", "run"),
              ("validation", "raw"))),
        (Step("split", partial(_steps.split, spec.data), ("raw", "validation"), ("splits",)),
         Step("features", partial(_steps.features, spec.features, spec.data, task),
              ("raw", "splits", "run"), ("dataset", "feature_pipeline"))),
    )
