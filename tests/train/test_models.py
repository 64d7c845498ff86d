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


def test_cnn_reshapes_flat_rows_into_images():
    spec = ModelSpec(type="cnn", task="multiclass", kwargs={"image_shape": [1, 8, 8]})
    model = build_model(spec, 64, 10)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.in_channels, c.out_channels) for c in convs] == [(1, 32), (32, 64)]
    assert model(torch.zeros(5, 64)).shape == (5, 10)


def test_cnn_with_several_channels_and_odd_sizes():
    spec = ModelSpec(type="cnn", task="binary", dropout=0.2,
                     kwargs={"image_shape": [3, 5, 7], "channels": [4, 4, 4]})
    model = build_model(spec, 105, 1)
    assert model(torch.zeros(2, 105)).shape == (2, 1)
    assert any(isinstance(m, nn.Dropout) and m.p == 0.2 for m in model.modules())


def test_cnn_image_shape_must_hold_the_features():
    spec = ModelSpec(type="cnn", task="binary", kwargs={"image_shape": [1, 8, 7]})
    with pytest.raises(TrainingError, match=r"image_shape: \[1, 8, 7\] holds 56 values, but each "
                                            r"row has 64 features"):
        build_model(spec, 64, 1)


def test_cnn_needs_an_image_shape():
    with pytest.raises(TrainingError, match="cannot build with .*image_shape"):
        build_model(ModelSpec(type="cnn", task="binary"), 64, 1)


def test_transformer_encodes_flat_rows_as_sequences():
    spec = ModelSpec(type="transformer", task="multiclass",
                     kwargs={"sequence_shape": [6, 4], "d_model": 16, "heads": 2, "layers": 1})
    model = build_model(spec, 24, 3)
    assert model(torch.randn(7, 24)).shape == (7, 3)
    assert model.position.shape == (1, 6, 16)
    assert len(model.encoder.layers) == 1


def test_transformer_output_does_not_depend_on_the_batch():
    spec = ModelSpec(type="transformer", task="regression", kwargs={"sequence_shape": [4, 2]})
    model = build_model(spec, 8, 1).eval()
    rows = torch.randn(3, 8)
    assert torch.allclose(model(rows)[1:2], model(rows[1:2]), atol=1e-6)


@pytest.mark.parametrize("kwargs,match", [
    ({"sequence_shape": [5, 4]}, r"sequence_shape: expected \[T, D\] with T\*D = 24"),
    ({"sequence_shape": [6, 4], "d_model": 10, "heads": 4}, "d_model .10. must be a multiple"),
])
def test_transformer_shape_errors(kwargs, match):
    with pytest.raises(TrainingError, match=match):
        build_model(ModelSpec(type="transformer", task="binary", kwargs=kwargs), 24, 1)


@pytest.mark.parametrize("kind,kwargs,features", [
    ("cnn", {"image_shape": [1, 4, 4], "channels": [8]}, 16),
    ("transformer", {"sequence_shape": [4, 4], "d_model": 16, "heads": 2, "layers": 1}, 16),
])
def test_built_in_models_learn_with_the_trainer(kind, kwargs, features):
    from train_helpers import blobs, make_trainer

    torch.manual_seed(0)
    model = build_model(ModelSpec(type=kind, task="binary", kwargs=kwargs), features, 1)
    result = make_trainer(model=model, data=blobs("binary", features=features), epochs=4,
                          optimizer={"lr": 0.005}).fit()
    assert result.history[-1]["val_loss"] < result.history[0]["val_loss"]
