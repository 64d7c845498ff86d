"""What a spec needs before population-based training starts; every problem names its field.

- a `tuning.pbt` section (with `tuning.space` and `tuning.objective`);
- every path of `tuning.space` must be one a member can change mid-training
  (`_pbt_space.MUTABLE_PATHS`), and each value of its range must be one the spec accepts there;
- the objective is scored on the validation split at each interval's end: `val_loss` or a
  validation metric of the task;
- PBT decides which members go on, so `training.early_stopping` is refused; members train in
  this process, so `training.strategy` must be `single`.
"""

from __future__ import annotations

from trainforge.config import PbtSpec, PipelineSpec, TuningSpec
from trainforge.errors import SpecError
from trainforge.evaluate import METRICS_BY_TASK
from trainforge.tuning._pbt_space import MUTABLE_PATHS, immutable_paths, spec_with


def objective_names(task: str) -> list[str]:
    """The metrics an interval's end scores: `val_loss` and the task's validation metrics."""
    return ["val_loss", *(f"val_{name}" for name in METRICS_BY_TASK[task])]


def check_pbt_spec(spec: PipelineSpec, source: str) -> tuple[TuningSpec, PbtSpec]:
    """The tuning and PBT sections of a spec fit for PBT; `SpecError` listing each problem."""
    tuning = spec.tuning
    if tuning is None or tuning.pbt is None:
        raise SpecError([f"{source}: tuning.pbt: missing; population-based training needs a "
                         "tuning section with pbt (population, interval_steps, ...), space and "
                         "objective"])
    problems = [
        f"{source}: tuning.space.{path}: cannot change mid-training, which PBT does to a "
        f"running member; expected one of {', '.join(MUTABLE_PATHS)}"
        for path in immutable_paths(tuning.space)
    ]
    names = objective_names(spec.model.task)
    if tuning.objective.metric not in names:
        problems.append(f"{source}: tuning.objective.metric: {tuning.objective.metric!r} is not "
                        f"scored at an interval's end; expected one of {', '.join(names)}")
    if spec.training.early_stopping is not None:
        problems.append(f"{source}: training.early_stopping: not with PBT, which decides "
                        "itself which members go on; remove it")
    if spec.training.strategy != "single":
        problems.append(f"{source}: training.strategy: PBT trains its members in one process; "
                        f"expected 'single', got {spec.training.strategy!r}")
    if problems:
        raise SpecError(problems)
    _check_values(spec, tuning, source)
    return tuning, tuning.pbt


def _check_values(spec: PipelineSpec, tuning: TuningSpec, source: str) -> None:
    """Each path's range ends must be values the spec accepts there (e.g. momentum is for
    sgd only, pos_weight above 0)."""
    for path, param in tuning.space.items():
        ends = param.values if param.type == "choice" else [param.low, param.high]
        for value in ends or ():
            try:
                spec_with(spec, {path: value}, source)
            except SpecError as exc:
                raise SpecError([f"{source}: tuning.space.{path}: the value {value!r} is "
                                 f"refused: {problem}" for problem in exc.problems]) from None
