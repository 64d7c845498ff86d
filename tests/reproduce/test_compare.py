"""A reproduction compared with its run: every series step by step (timings left out), params
with their paths inside each checkout, the data version; a difference named with its likely
causes, the environment's differences reported beside the verdict; `--strict` refuses another
package before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainforge.config import Settings
from trainforge.entities import MetricPoint, Run
from trainforge.errors import NotReproducible
from trainforge.reproduce import compare, plan_reproduction
from trainforge.session import Session
from trainforge.storage.artifacts import open_artifact_store
from trainforge.tracking import capture_environment


def _session(store, tmp_path: Path) -> Session:
    return Session(Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)}), store,
                   open_artifact_store(tmp_path / "artifacts"))


def _run(store, root: str, losses: list[float], deterministic: bool = True,
         registry: dict[str, Any] | None = None, **environment: Any) -> Run:
    """A run as a pipeline run records one: its spec (a path under `root`, its repository)
    as params and resolved spec, this machine's environment changed by `environment`, and
    its loss and throughput series."""
    spec = {"training": {"deterministic": deterministic, "seed": 0},
            "data": {"source": f"{root}/data/*.parquet", "version": None}, "registry": registry}
    experiment = store.get_or_create_experiment("e").experiment_id
    run = store.create_run(experiment, params=spec,
                           environment={**capture_environment(), **environment},
                           artifact_uri="unused", system={"resolved_spec": spec,
                                                          "code": {"repository": root}})
    store.log_metrics(run.run_id, [
        MetricPoint(name, value, step, 0.0) for step, loss in enumerate(losses)
        for name, value in (("loss", loss), ("samples_per_s", 100.0 + step))])
    return store.get_run(run.run_id)


def test_the_same_series_and_params_in_another_checkout_are_identical(store) -> None:
    original = _run(store, "/home/me/project", [0.5, 0.25, 0.125],
                    registry={"model_name": "fraud_detector"})
    again = _run(store, "/tmp/checkout", [0.5, 0.25, 0.125])  # registers nothing

    comparison = compare(original, again, store, "/tmp/checkout")

    assert comparison.identical and comparison.differences == ()
    assert (comparison.series, comparison.points) == (1, 3)  # samples_per_s: a timing
    assert comparison.to_json()["verdict"] == "identical"


def test_a_differing_step_is_named_with_its_likely_causes(store) -> None:
    original = _run(store, "/p", [0.5, 0.25, 0.125], deterministic=False, torch="2.4.0",
                    cpu_model="another CPU")
    again = _run(store, "/p", [0.5, 0.25, 0.1251, 0.0625], deterministic=False)

    comparison = compare(original, again, store, "/p")

    assert not comparison.identical
    assert [d.describe() for d in comparison.differences] == [
        "metric loss at step 2: 0.125 recorded, 0.1251 reproduced"]
    causes = "\n".join(comparison.causes)
    assert "another torch: 2.4.0 recorded" in causes
    assert "other hardware: environment cpu_model" in causes
    assert "nondeterministic kernels: the run had training.deterministic: false" in causes
    assert {d.name for d in comparison.environment} == {"torch", "cpu_model"}


def test_strict_refuses_a_package_that_differs_before_anything_runs(store, tmp_path) -> None:
    packages = {**capture_environment()["packages"], "numpy": "0.0.1", "left-since": "1.0"}
    original = _run(store, "/p", [0.5], packages=packages)
    store.set_system(original.run_id, {"code": None})

    with pytest.raises(NotReproducible) as refused:
        plan_reproduction(store.get_run(original.run_id), _session(store, tmp_path),
                          strict=True)

    message = str(refused.value)
    assert "the same packages (--strict): numpy 0.0.1 recorded" in message
    assert "left-since 1.0 recorded, not installed here" in message
    assert "its code: it did not run inside a git repository" in message
