"""A run and its reproduction compared: params, data version, environment and every metric
series step by step; each difference in the results named with its likely causes.

Rules:
- params are compared flattened, the paths under each run's repository shown as
  `<repository>/...` (the reproduction's lie in its checkout), without `data.version` (the
  reproduction pins the original's data version, compared as itself),
  `training.checkpoint.resume` (a reproduction starts from step 0) and `registry` (a
  reproduction registers no model version);
- metrics whose names end in `_s` are timings (seconds, rates per second) and are not
  compared; every other series must hold the same steps with the same values, bit for bit;
- the environment's differences (interpreter, torch, CUDA, GPUs, CPU, packages) are reported
  beside the verdict, never part of it: "identical" means the same params, data and series.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainforge.config import flatten_paths
from trainforge.entities import Run
from trainforge.storage import MetricStore, all_items

NOT_COMPARED = ("data.version", "training.checkpoint.resume", "registry")
TIMING_SUFFIX = "_s"
ENVIRONMENT_KEYS = ("python", "torch", "cuda", "gpus", "gpu_driver", "cpu_model", "cpu_count",
                    "platform")


@dataclass(frozen=True)
class Difference:
    """One thing that differs: `kind` params, data, metric or environment; `name` the param,
    metric or environment key; at `step` for a metric series (None: the series' lengths or
    a value that is not a series)."""

    kind: str
    name: str
    recorded: Any
    reproduced: Any
    step: int | None = None

    def describe(self) -> str:
        where = f" at step {self.step}" if self.step is not None else ""
        return f"{self.kind} {self.name}{where}: {self.recorded!r} recorded, " \
               f"{self.reproduced!r} reproduced"


@dataclass(frozen=True)
class Comparison:
    """The verdict on a reproduction: `differences` in params, data and metric series (none:
    identical), the environment's differences, the likely causes of the differences and how
    many series and points were compared."""

    original: str
    reproduction: str
    differences: tuple[Difference, ...]
    environment: tuple[Difference, ...]
    causes: tuple[str, ...]
    series: int
    points: int

    @property
    def identical(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        return {"original": self.original, "reproduction": self.reproduction,
                "verdict": "identical" if self.identical else "different",
                "differences": [d.describe() for d in self.differences],
                "environment": [d.describe() for d in self.environment],
                "causes": list(self.causes), "series": self.series, "points": self.points}


def compare(original: Run, reproduction: Run, metrics: MetricStore, checkout: str) -> Comparison:
    """`reproduction` (checked out into `checkout`) against `original`, which it reproduces."""
    recorded_root = (original.system.get("code") or {}).get("repository", "")
    differences = [
        *_params(original.params, recorded_root, reproduction.params, checkout),
        *([Difference("data", "data_version", original.data_version_id,
                      reproduction.data_version_id)]
          if original.data_version_id != reproduction.data_version_id else []),
    ]
    series = points = 0
    for key in sorted(set(original.metrics) | set(reproduction.metrics)):
        if key.endswith(TIMING_SUFFIX):
            continue
        before, after = _series(metrics, original.run_id, key), _series(
            metrics, reproduction.run_id, key)
        series += 1
        points += len(before)
        if (found := _first_difference(key, before, after)) is not None:
            differences.append(found)
    environment = _environment(original.environment, reproduction.environment)
    causes = likely_causes(original, environment) if differences else ()
    return Comparison(original.run_id, reproduction.run_id, tuple(differences),
                      tuple(environment), tuple(causes), series, points)


def likely_causes(original: Run, environment: list[Difference]) -> list[str]:
    """Why the results of a run and its reproduction may differ, most likely first."""
    changed = {d.name: d for d in environment}
    causes = []
    if "torch" in changed:
        causes.append(f"another torch: {changed['torch'].recorded} recorded, "
                      f"{changed['torch'].reproduced} here")
    hardware = [name for name in ("gpus", "cuda", "gpu_driver", "cpu_model", "cpu_count")
                if name in changed]
    if hardware:
        causes.append("other hardware: " + "; ".join(changed[name].describe()
                                                     for name in hardware))
    spec = (original.system.get("resolved_spec") or {}).get("training") or {}
    if not spec.get("deterministic", False):
        causes.append("nondeterministic kernels: the run had training.deterministic: false")
    packages = [d.name for d in environment if d.kind == "package"]
    if packages:
        causes.append("a difference in the environment: packages " + ", ".join(packages))
    return causes or ["none found: the same code, data, seed, packages and hardware; look for "
                      "randomness the seed does not cover (a step of your own, the clock)"]


def _params(before: dict[str, Any], before_root: str, after: dict[str, Any],
            after_root: str) -> list[Difference]:
    flat_before = {k: _shown(v, before_root) for k, v in flatten_paths(before).items()}
    flat_after = {k: _shown(v, after_root) for k, v in flatten_paths(after).items()}
    return [Difference("params", key, flat_before.get(key), flat_after.get(key))
            for key in sorted(set(flat_before) | set(flat_after))
            if not _set_by_reproduce(key) and flat_before.get(key) != flat_after.get(key)]


def _set_by_reproduce(key: str) -> bool:
    return any(key == path or key.startswith(path + ".") for path in NOT_COMPARED)


def _shown(value: Any, root: str) -> Any:
    if isinstance(value, str) and root and (value == root or value.startswith(root + "/")):
        return "<repository>" + value[len(root):]
    if isinstance(value, list):
        return [_shown(item, root) for item in value]
    return value


def _series(metrics: MetricStore, run_id: str, key: str) -> list[tuple[int, float]]:
    return [(point.step, point.value) for point in all_items(
        lambda cursor: metrics.get_metric_history(run_id, key, cursor=cursor))]


def _first_difference(key: str, before: list[tuple[int, float]],
                      after: list[tuple[int, float]]) -> Difference | None:
    for (step, value), (other_step, other) in zip(before, after, strict=False):
        if step != other_step:
            return Difference("metric", key, f"step {step}", f"step {other_step}")
        if value != other and not (value != value and other != other):  # NaN == NaN here
            return Difference("metric", key, value, other, step)
    if len(before) != len(after):
        return Difference("metric", key, f"{len(before)} points", f"{len(after)} points")
    return None


def _environment(before: dict[str, Any], after: dict[str, Any]) -> list[Difference]:
    found = [Difference("environment", key, before.get(key), after.get(key))
             for key in ENVIRONMENT_KEYS if before.get(key) != after.get(key)]
    old, new = before.get("packages") or {}, after.get("packages") or {}
    found += [Difference("package", name, old.get(name), new.get(name))
              for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]
    return found
