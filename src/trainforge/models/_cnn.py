"""`cnn`: a small convolutional network over images given as flat feature rows."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from trainforge.errors import TrainingError


def build_cnn(
    in_features: int,
    out_features: int,
    *,
    image_shape: Sequence[int],
    channels: Sequence[int] = (32, 64),
    kernel_size: int = 3,
    dropout: float = 0.0,
) -> nn.Module:
    """Rows of C*H*W pixels reshaped to (C, H, W); per entry of `channels` a same-padded
    convolution, ReLU and (while the image is at least 2x2) 2x2 max pooling; then flatten,
    dropout and a linear head."""
    shape = _image_shape(image_shape, in_features)
    layers: list[nn.Module] = [nn.Unflatten(1, shape)]
    depth, height, width = shape
    for width_out in channels:
        layers += [nn.Conv2d(depth, width_out, kernel_size, padding=kernel_size // 2), nn.ReLU()]
        depth = width_out
        if height >= 2 and width >= 2:
            layers.append(nn.MaxPool2d(2))
            height, width = height // 2, width // 2
    layers += [nn.Flatten(), nn.Dropout(dropout), nn.Linear(depth * height * width, out_features)]
    return nn.Sequential(*layers)


def _image_shape(image_shape: Sequence[int], in_features: int) -> tuple[int, int, int]:
    shape = tuple(int(v) for v in image_shape)
    if len(shape) != 3 or min(shape) < 1:
        raise TrainingError(f"model.kwargs.image_shape: expected [C, H, W], got {list(shape)}")
    if shape[0] * shape[1] * shape[2] != in_features:
        raise TrainingError(
            f"model.kwargs.image_shape: {list(shape)} holds {shape[0] * shape[1] * shape[2]} "
            f"values, but each row has {in_features} features"
        )
    return shape
