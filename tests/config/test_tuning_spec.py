"""The `tuning:` section: bad search spaces are errors naming the field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainforge.config import ParamSpec, TuningSpec

OBJECTIVE = {"metric": "val_loss", "direction": "minimize"}


@pytest.mark.parametrize(("param", "message"), [
    ({"type": "uniform", "low": 1.0, "high": 0.5}, r"low \(1\) is above high \(0.5\)"),
    ({"type": "loguniform", "low": 0.0, "high": 1.0}, r"a log scale needs low > 0 \(got 0\)"),
    ({"type": "int", "low": -1, "high": 8, "log": True}, r"a log scale needs low > 0"),
    ({"type": "choice", "values": []}, "a choice needs a non-empty list of values"),
    ({"type": "int", "low": 0.5, "high": 4}, "an int parameter needs integer low and high"),
    ({"type": "uniform", "low": 0.1}, "a uniform parameter needs low and high"),
])
def test_a_bad_dimension_is_an_error_naming_its_path(param, message):
    with pytest.raises(ValidationError, match=message) as caught:
        TuningSpec.model_validate({"objective": OBJECTIVE,
                                   "space": {"training.optimizer.lr": param}})
    assert caught.value.errors()[0]["loc"][:2] == ("space", "training.optimizer.lr")


def test_a_study_needs_a_budget_and_a_space():
    with pytest.raises(ValidationError, match="needs a budget"):
        TuningSpec.model_validate({"objective": OBJECTIVE, "trials": None,
                                   "space": {"model.dropout": {"type": "uniform", "low": 0,
                                                               "high": 0.5}}})
    with pytest.raises(ValidationError, match="space"):
        TuningSpec.model_validate({"objective": OBJECTIVE, "space": {}})


def test_a_good_space_reads_as_written():
    spec = TuningSpec.model_validate({
        "objective": {"metric": "val_accuracy", "direction": "maximize"},
        "space": {"training.optimizer.lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
                  "model.hidden": {"type": "choice", "values": [[64], [128, 64]]}},
        "sampler": "random", "pruner": {"type": "asha"}})
    assert spec.space["model.hidden"] == ParamSpec(type="choice", values=[[64], [128, 64]])
    assert spec.pruner.type == "asha" and spec.trials == 20
