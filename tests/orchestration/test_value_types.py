"""Registered value types in the value store: a dataclass of frames, arrays, tensors and plain
fields comes back equal, nested and typed as it went in; the same value gives the same bytes;
what cannot be stored stays in memory; a damaged or unknown value is refused naming it."""

from __future__ import annotations

import enum
import hashlib
import json
import math
import struct
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from trainforge.errors import ValueStoreError
from trainforge.orchestration import ValueStore
from trainforge.orchestration.value_types import DecodeContext, StructCodec, register_value_type
from trainforge.orchestration.values import ValueRef
from trainforge.storage.objects import open_object_store


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Part:
    name: str
    weights: np.ndarray


@dataclass(frozen=True)
class Report:
    frame: pd.DataFrame
    parts: tuple[Part, ...]
    colour: Colour
    tensor: torch.Tensor
    when: datetime
    scores: dict[str, float]
    pairs: list[tuple[int, str]]
    raw: bytes
    extra: Any = None
    seen: list[str] = field(default_factory=list)


class Opaque:
    pass


class Unregistered(str, enum.Enum):
    A = "a"


register_value_type(Part, module=__name__)
register_value_type(Report, module=__name__)
register_value_type(Colour, module=__name__)


@pytest.fixture
def values(tmp_path: Path) -> ValueStore:
    return ValueStore(open_object_store(tmp_path / "objects"))


def _report(extra: Any = None) -> Report:
    return Report(
        frame=pd.DataFrame({"a": [1, 2], "b": ["x", None]}, index=[7, 3]),
        parts=(Part("first", np.arange(6, dtype=np.float32).reshape(2, 3)),
               Part("second", np.array(["u", "vw"]))),
        colour=Colour.BLUE,
        tensor=torch.tensor([[1.5, -2.0]], dtype=torch.bfloat16),
        when=datetime(2026, 11, 26, 12, 30, tzinfo=timezone.utc),
        scores={"auc": 0.91, "missing": float("nan"), "far": float("inf")},
        pairs=[(1, "one"), (2, "two")],
        raw=b"\x00\x01bytes",
        extra=extra,
    )


def test_a_registered_dataclass_comes_back_equal_and_typed(values: ValueStore) -> None:
    report = _report()
    ref = values.put(report, "the report")
    assert ref is not None and ref.codec == "struct"
    back = values.get(ref)
    assert type(back) is Report
    pd.testing.assert_frame_equal(back.frame, report.frame)
    assert [type(p) for p in back.parts] == [Part, Part] and isinstance(back.parts, tuple)
    for mine, theirs in zip(back.parts, report.parts, strict=True):
        assert mine.name == theirs.name and mine.weights.dtype == theirs.weights.dtype
        np.testing.assert_array_equal(mine.weights, theirs.weights)
    assert back.colour is Colour.BLUE
    assert back.tensor.dtype == torch.bfloat16 and torch.equal(back.tensor, report.tensor)
    assert back.when == report.when and back.when.tzinfo is not None
    assert list(back.scores) == ["auc", "missing", "far"]  # in the order they were made
    assert back.scores["auc"] == 0.91 and math.isnan(back.scores["missing"])
    assert back.scores["far"] == math.inf
    assert back.pairs == [(1, "one"), (2, "two")] and isinstance(back.pairs[0], tuple)
    assert back.raw == report.raw and back.seen == [] and back.extra is None


def test_the_same_value_is_the_same_bytes_and_stored_once(values: ValueStore) -> None:
    first, second = values.put(_report()), values.put(_report())
    assert first == second
    assert values.put(_report(extra={"k": 1})) != first
    assert len(list(values.objects.list("values"))) == 2


@pytest.mark.parametrize("extra", [
    Opaque(),                                  # an object of no registered type
    np.array([object(), 1], dtype=object),     # an array of Python objects
    {1: "a"},                                  # a dict keyed by other than strings
    lambda: None,                              # a callable
    Unregistered.A,                            # an enum nobody registered (not a plain str)
], ids=["unregistered", "object-array", "int-keys", "callable", "unregistered-enum"])
def test_a_value_holding_what_cannot_be_stored_stays_in_memory(values: ValueStore,
                                                               extra: Any) -> None:
    assert values.put(_report(extra=extra)) is None
    assert list(values.objects.list("values")) == []


def test_damaged_bytes_are_refused_naming_the_object(values: ValueStore) -> None:
    data = b"PK\x03\x04 not a struct"
    forged = ValueRef("struct", hashlib.sha256(data).hexdigest(), len(data))
    values.objects.write(forged.key, data)
    with pytest.raises(ValueStoreError, match=rf"the report: .*{forged.digest}.tfv cannot be "
                                              r"decoded as struct: not a struct value"):
        values.get(forged, "the report")
    ref = values.put(_report())
    assert ref is not None
    values.objects.write(ref.key, data)
    with pytest.raises(ValueStoreError, match="does not hash to its name"):
        values.get(ref, "the report")


def test_a_type_this_process_does_not_know_is_refused_by_name() -> None:
    header = json.dumps({"tree": {"o": "gone.module:Thing", "v": {"d": {}}}, "blobs": [],
                         "modules": []}).encode()
    data = b"TFV1" + struct.pack("<Q", len(header)) + header
    with pytest.raises(ValueStoreError, match="gone.module:Thing is not a registered value "
                                              "type in this process"):
        StructCodec().decode(data, DecodeContext())


def test_a_type_is_registered_by_importing_the_module_its_header_names() -> None:
    header = json.dumps({"tree": {"o": "trainforge.split._split:Splits", "v": {"d": {}}},
                         "blobs": [], "modules": ["no_such_module_of_values"]}).encode()
    data = b"TFV1" + struct.pack("<Q", len(header)) + header
    with pytest.raises(ValueStoreError, match="no_such_module_of_values, the module registering "
                                              "its types, does not import"):
        StructCodec().decode(data, DecodeContext())


def test_registering_a_class_that_is_no_dataclass_needs_both_functions() -> None:
    with pytest.raises(TypeError, match=r"Opaque: a value type other than a dataclass or an "
                                        "enum needs to_state and from_state"):
        register_value_type(Opaque, module=__name__)
