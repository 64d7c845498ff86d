"""The search space: bad spaces are errors naming `tuning.space.<path>` before any run exists,
sampled values become spec overrides, and each dimension maps to its Optuna distribution."""

from __future__ import annotations

import pytest
from home import home_store
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from trainforge.config import ParamSpec, load_spec
from trainforge.errors import SpecError
from trainforge.pipeline import plan_pipeline
from trainforge.tuning import check_space, distribution, trial_overrides, tune


def _with_space(project, space: str, extra: str = "") -> str:
    """The digits spec with its tuning section replaced by one searching `space`."""
    path = project / "pipeline.yaml"
    text = path.read_text().split("\ntuning:")[0]
    path.write_text(text + "\ntuning:\n  objective: {metric: val_accuracy, direction: maximize}\n"
                    f"  space:\n{space}\n{extra}")
    return str(path)


@pytest.mark.parametrize(("space", "message"), [
    ("    training.optimizr.lr: {type: uniform, low: 0.001, high: 0.01}",
     r"tuning.space.training.optimizr.lr: the value 0.001 does not fit the spec: "
     r"training.optimizr: unknown key; did you mean 'optimizer'\?"),
    ("    training.batch_size: {type: choice, values: [64, -1]}",
     r"tuning.space.training.batch_size: the value -1 does not fit the spec: "
     r"training.batch_size: expected an integer > 0"),
    ("    model.dropout: {type: uniform, low: 0.5, high: 1.5}",
     r"tuning.space.model.dropout: the value 1.5 does not fit the spec: model.dropout"),
    ("    tuning.seed: {type: int, low: 0, high: 3}",
     r"tuning.space.tuning.seed: a study cannot search its own settings"),
])
def test_a_path_or_value_that_does_not_fit_the_spec_names_its_space_entry(
    digits_project, space, message
):
    path = _with_space(digits_project, space)
    with pytest.raises(SpecError, match=message) as caught:
        tune(path)
    assert caught.value.problems[0].startswith(f"{path}: tuning.space.")
    assert home_store().list_runs().items == ()  # nothing was started


@pytest.mark.parametrize(("space", "message"), [
    ("    model.dropout: {type: uniform, low: 0.4, high: 0.1}",
     r"tuning.space.model.dropout: low \(0.4\) is above high \(0.1\)"),
    ("    training.batch_size: {type: choice, values: []}",
     r"tuning.space.training.batch_size: a choice needs a non-empty list of values"),
    ("    training.optimizer.lr: {type: loguniform, low: 0, high: 0.1}",
     r"tuning.space.training.optimizer.lr: a log scale needs low > 0 \(got 0\)"),
    ("    training.optimizer.lr: {type: uniform, low: 0.001, high: 0.1, log: true, step: 0.01}",
     r"tuning.space.training.optimizer.lr: step cannot be combined with a log scale"),
])
def test_a_malformed_dimension_is_an_error_naming_its_field(digits_project, space, message):
    with pytest.raises(SpecError, match=message):
        tune(_with_space(digits_project, space))
    assert home_store().list_runs().items == ()


def test_a_grid_study_needs_the_values_of_each_numeric_dimension(digits_project):
    path = _with_space(digits_project,
                       "    model.dropout: {type: uniform, low: 0.0, high: 0.4}",
                       "  sampler: grid")
    with pytest.raises(SpecError, match=r"tuning.space.model.dropout.grid: the grid sampler "
                                        r"needs the values to visit"):
        tune(path)


def test_a_pbt_spec_is_sent_to_run_pbt(digits_project):
    path = _with_space(digits_project, "    model.dropout: {type: uniform, low: 0.0, high: 0.4}",
                       "  pbt: {population: 4}")
    with pytest.raises(SpecError, match="tuning.pbt: a population-based study runs with "
                                        "run_pbt"):
        tune(path)


def test_a_spec_without_a_tuning_section_has_no_study(digits_project):
    with pytest.raises(SpecError, match="the spec has no tuning section"):
        tune(digits_project / "pipeline.yaml", ["tuning=null"])


def test_sampled_values_apply_to_the_spec_as_overrides(digits_project):
    values = {"training.optimizer.lr": 5e-05, "model.kwargs.channels": [16, 32],
              "training.batch_size": 128, "model.dropout": 0.25}
    spec = plan_pipeline(digits_project / "pipeline.yaml", trial_overrides(values)).spec
    assert spec.training.optimizer.lr == 5e-05 and spec.training.batch_size == 128
    assert spec.model.kwargs["channels"] == [16, 32] and spec.model.dropout == 0.25
    check_space(load_spec(digits_project / "pipeline.yaml"), "pipeline.yaml")  # the example's


def test_each_dimension_maps_to_its_optuna_distribution():
    assert distribution(ParamSpec(type="loguniform", low=1e-4, high=1e-1)) == \
        FloatDistribution(1e-4, 1e-1, log=True)
    assert distribution(ParamSpec(type="uniform", low=0, high=1, step=0.25)) == \
        FloatDistribution(0, 1, step=0.25)
    assert distribution(ParamSpec(type="int", low=8, high=64, log=True)) == \
        IntDistribution(8, 64, log=True)
    assert distribution(ParamSpec(type="choice", values=[[64], [128, 64], "auto"])) == \
        CategoricalDistribution(["[64]", "[128, 64]", "auto"])
