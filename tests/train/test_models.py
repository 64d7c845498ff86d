import pytest
import torch
from torch import nn

from trainforge.config import ModelSpec
from trainforge.errors import TrainingError
from trainforge.models import build_model


def build_tiny(in_features, out_features, scale=1.0):
    layer = nn.Linear(in_features, out_features)
    layer.scale = scale
    return layer


def test_mlp_has_the_hidden_layers_of_the_spec():
    model = build_model(ModelSpec(task="binary", hidden=[8, 4], dropout=0.1), 5, 1)
    linears = [m for m in model if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(5, 8), (8, 4), (4, 1)]
    assert any(isinstance(m, nn.Dropout) for m in model)
    assert model(torch.zeros(2, 5)).shape == (2, 1)


def test_user_model_by_module_and_function_gets_spec_kwargs():
    spec = ModelSpec(type=f"{__name__}:build_tiny", task="binary", kwargs={"scale": 2.0})
    model = build_model(spec, 3, 1)
    assert isinstance(model, nn.Linear) and model.scale == 2.0


def test_unknown_builtin_suggests_the_closest():
    with pytest.raises(TrainingError, match="model.type 'mpl'.*did you mean 'mlp'"):
        build_model(ModelSpec(type="mpl", task="binary"), 3, 1)


def test_user_model_that_cannot_be_imported():
    with pytest.raises(TrainingError, match="model.type 'nope.mod:fn': cannot import"):
        build_model(ModelSpec(type="nope.mod:fn", task="binary"), 3, 1)


def test_user_model_with_wrong_kwargs():
    spec = ModelSpec(type=f"{__name__}:build_tiny", task="binary", kwargs={"bogus": 1})
    with pytest.raises(TrainingError, match="cannot build with"):
        build_model(spec, 3, 1)
