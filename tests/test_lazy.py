"""Packages that import their exports on first use (`trainforge._lazy`): each exports exactly
what it maps, every name resolves to the object its module defines, and unknown names fail."""

from __future__ import annotations

import importlib

import pytest

import trainforge

LAZY_PACKAGES = ["trainforge", "trainforge.config", "trainforge.evaluate", "trainforge.export",
                 "trainforge.ingest", "trainforge.models", "trainforge.profiles",
                 "trainforge.server", "trainforge.serving", "trainforge.pipeline",
                 "trainforge.storage", "trainforge.tracking", "trainforge.train",
                 "trainforge.train.checkpoint", "trainforge.tuning", "trainforge.validate"]


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_export_resolves_to_its_modules_object(name: str) -> None:
    package = importlib.import_module(name)
    exports = package._EXPORTS
    assert set(package.__all__) - {"__version__"} >= set(exports)
    for export, module in exports.items():
        assert getattr(package, export) is getattr(importlib.import_module(module), export)
    assert set(package.__all__) <= set(dir(package))


def test_an_unknown_name_is_an_attribute_error() -> None:
    train = importlib.import_module("trainforge.train")
    with pytest.raises(AttributeError, match="module 'trainforge.train' has no attribute 'Nope'"):
        train.Nope  # noqa: B018
    with pytest.raises(AttributeError, match="module 'trainforge' has no attribute 'Nope'"):
        trainforge.Nope  # noqa: B018
