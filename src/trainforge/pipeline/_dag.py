"""The standard training pipeline as a `Dag`: ingest → validate → (profile, drift) → split →
features → train → evaluate → (cross_validate, with `evaluation.cross_validation`) → gate →
register.

Steps record to the tracked run their context carries (`StepContext.recorder`), never through
a value: each function in `_steps.py` takes it as `run`, given by `Recorded`. The chain is
strict: a data-quality step that fails stops the split (and all after it), a failed cross
validation stops the gate.

Their outputs go through the value store (types registered in `_values.py`), so `trainforge
resume` reuses those of the steps that succeeded and a step can run in another process (the
train step on torchrun workers). The data steps (ingest, validate, profile, split, features)
are taken from an earlier run's cache when nothing they depend on changed: the spec's data
section (and features section, task), the source's content, trainforge and the packages it
uses; what the cached attempt recorded (the data version, validation report, profile, feature
pipeline) is written to the new run (`orchestration/replay.py`). Drift, train and what follows
run in every run (`cache: False`): what they record belongs to the run that ran them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from trainforge.config import Credentials, PipelineSpec
from trainforge.errors import TrainforgeError
from trainforge.orchestration import Dag, Step, StepContext
from trainforge.orchestration.dag import StepOptions
from trainforge.orchestration.steps import steps_from_yaml
from trainforge.pipeline import _data_quality, _steps, _streaming
from trainforge.pipeline import _values as _values  # registers the values stored per step
from trainforge.pipeline._alerts import Alert
from trainforge.storage.contracts import RegistryStore
from trainforge.train import Callback, PreemptionNotice
from trainforge.versioning import DataRepository


def build_training_dag(
    spec: PipelineSpec, registry: RegistryStore | None, callbacks: Sequence[Callback] = (),
    preemption: PreemptionNotice | None = None, data: DataRepository | None = None,
    alert: Alert | None = None, quality: bool = True, source: str = "spec",
    extra: Sequence[Step] = (), credentials: Credentials | None = None,
) -> Dag:
    """Bind each step to its spec section and services; the wiring is data (names in, names
    out). `registry` receives the model versions (None: a DAG that never registers, such as a
    non-reporting rank's); `callbacks` join the trainer's (a tuning trial's pruning);
    `preemption` is the notice the entry point installs (None: signals do not stop training);
    `data` hashes the files read (once per unchanged file) and reads pinned data versions;
    `alert` announces data that breaks its contract (a log line and the webhooks); `quality`
    False leaves out the profile and drift steps (a non-reporting rank's DAG). The spec's own
    `steps` join the chain (`source` names the spec file in their errors), then `extra` (steps
    given in Python). `credentials` open the checkpoint location (default: the spec's own)."""
    task = spec.model.task
    reading, preparing = _data_steps(spec, data, alert)
    checks = (
        *([_recorded("profile", partial(_data_quality.profile, data), ("read",), ("profile",),
                     keyed={"data": spec.data})]
          if quality and spec.data.profile else []),
        *([_recorded("drift", partial(_data_quality.drift, spec.data, spec.registry, data,
                                      registry, alert), ("read", "profile"), ("drift",))]
          if quality and spec.data.drift is not None else []),
    )
    split, featurize = preparing
    cross_validation = (
        [_recorded("cross_validate", partial(_steps.cross_validate, spec),
                   ("splits", "dataset"), ("cross_validation",))]
        if spec.evaluation.cross_validation else [])
    steps = (
        *reading,
        *checks,
        replace(split, options=split.options.following(step.name for step in checks)),
        featurize,
        _recorded("train", partial(_steps.train, spec, tuple(callbacks), preemption,
                                   credentials or spec.credentials()),
                  ("dataset",), ("trained",)),
        _recorded("evaluate", partial(_steps.evaluate, spec.evaluation, task),
                  ("trained", "dataset", "splits"), ("evaluation",)),
        *cross_validation,
        _recorded("gate", partial(_steps.gate, spec.evaluation), ("trained", "evaluation"),
                  ("gate",), after=tuple(step.name for step in cross_validation)),
        _recorded("register", partial(_steps.register, spec.registry, registry),
                  ("trained", "evaluation", "gate", "splits", "feature_pipeline"),
                  ("model_version",)),
        *(steps_from_yaml(spec.steps, source, _folder_of(source)) if spec.steps else []),
        *extra,
    )
    return Dag(name=spec.name, steps=steps)


def _folder_of(source: str) -> Path | None:
    """The folder of the spec file `source` (None for a spec given as an object)."""
    path = Path(source)
    return path.resolve().parent if path.is_file() else None


@dataclass(frozen=True)
class Recorded:
    """A standard step's function, called with the run its step context records to as
    `run`."""

    fn: Callable[..., dict[str, Any]]

    def __call__(self, context: StepContext, **inputs: Any) -> dict[str, Any]:
        if context.recorder is None:
            raise TrainforgeError(f"step {context.step!r} records to a run, and was given none")
        return self.fn(**inputs, run=context.recorder)


def _recorded(name: str, fn: Callable[..., dict[str, Any]], inputs: tuple[str, ...],
              outputs: tuple[str, ...], after: tuple[str, ...] = (),
              keyed: Mapping[str, Any] | None = None,
              source: Callable[[], Mapping[str, str]] | None = None) -> Step:
    """A standard step; a data step (`keyed` by the spec sections it depends on, `source`
    fingerprinting what it reads) is taken from the cache like any step."""
    return Step(name, Recorded(fn), inputs, outputs, context="context",
                options=StepOptions(after=after, cache=keyed is not None),
                key_params=keyed or {}, key_data=source)


def _data_steps(spec: PipelineSpec, data: DataRepository | None,
                alert: Alert | None) -> tuple[tuple[Step, Step], tuple[Step, Step]]:
    """(ingest and validate, split and features): the in-memory steps, or with
    `data.streaming` those that never hold the training rows (`_streaming.py`). Each is keyed
    by the spec's data section (and the task, the features section where they use them); the
    ingest step by the content of the source too."""
    task = spec.model.task
    module = _streaming if spec.data.streaming else _steps
    source = partial(_steps.source_content, spec.data, data)
    by_data: dict[str, Any] = {"data": spec.data, "task": task}
    validating = (partial(_streaming.validate, spec.data, alert) if spec.data.streaming
                  else partial(_steps.validate, spec.data, task, alert))
    return (
        (_recorded("ingest", partial(module.ingest, spec.data, data, _steps.snapshot_name(spec)),
                   (), ("read",),
                   keyed=by_data, source=source),
         _recorded("validate", validating, ("read",), ("validation", "raw"), keyed=by_data)),
        (Step("split", partial(module.split, spec.data), ("raw", "validation"), ("splits",),
              key_params=by_data),
         _recorded("features", partial(module.features, spec.features, spec.data, task),
                   ("raw", "splits"), ("dataset", "feature_pipeline"),
                   keyed={**by_data, "features": spec.features})),
    )
