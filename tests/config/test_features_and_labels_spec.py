"""The `features` section's include / exclude and `data.positive_label`, read from YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainforge.config import load_spec
from trainforge.errors import SpecError

SPEC = """
name: demo
data: {source: rows.csv, target: y}
features: FEATURES
model: {task: binary}
"""


def _load(tmp_path: Path, features: str, overrides: list[str] | None = None):
    path = tmp_path / "pipeline.yaml"
    path.write_text(SPEC.replace("FEATURES", features))
    return path, load_spec(path, overrides)


def _problems(tmp_path: Path, features: str) -> tuple[Path, list[str]]:
    path = tmp_path / "pipeline.yaml"
    path.write_text(SPEC.replace("FEATURES", features))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    return path, caught.value.problems


def test_include_defaults_to_listed_and_exclude_to_nothing(tmp_path: Path) -> None:
    _, spec = _load(tmp_path, "{transforms: [{type: standardize, columns: [a]}]}")

    assert (spec.features.include, spec.features.exclude) == ("listed", [])


def test_passthrough_alone_needs_no_transform(tmp_path: Path) -> None:
    _, spec = _load(tmp_path, "{passthrough: [a, b]}")

    assert spec.features.transforms == [] and spec.features.passthrough == ["a", "b"]


def test_include_remaining_needs_no_column_listed(tmp_path: Path) -> None:
    _, spec = _load(tmp_path, "{include: remaining, exclude: [id]}")

    assert spec.features.include == "remaining" and spec.features.exclude == ["id"]


def test_no_feature_at_all_is_an_error_naming_the_ways_out(tmp_path: Path) -> None:
    path, problems = _problems(tmp_path, "{transforms: []}")

    assert problems == [
        f"{path}: features: no features: list columns in transforms or passthrough, or set "
        "include: remaining to use every column not named"
    ]


def test_a_column_both_excluded_and_used_is_an_error(tmp_path: Path) -> None:
    path, problems = _problems(
        tmp_path, "{passthrough: [a], transforms: [{type: one_hot, columns: [b]}], "
        "exclude: [b, c]}")

    assert problems == [
        f"{path}: features: exclude lists ['b'], which feed features too; list a column in "
        "one place"
    ]


def test_an_unknown_include_lists_the_choices(tmp_path: Path) -> None:
    path, problems = _problems(tmp_path, "{include: all}")

    assert problems == [
        f"{path}: features.include: expected one of 'listed' or 'remaining', got 'all'"
    ]


@pytest.mark.parametrize(
    ("value", "loaded"),
    [("fraud", "fraud"), ("'yes'", "yes"), ("yes", True), ("1", 1), ("'1'", "1"), ("2.5", 2.5)],
)
def test_positive_label_keeps_the_type_yaml_gives_it(
    tmp_path: Path, value: str, loaded: object
) -> None:
    _, spec = _load(tmp_path, "{passthrough: [a]}", [f"data.positive_label={value}"])

    assert spec.data.positive_label == loaded
    assert type(spec.data.positive_label) is type(loaded)


def test_reserved_columns_are_the_target_and_the_time_column(tmp_path: Path) -> None:
    _, spec = _load(tmp_path, "{passthrough: [a]}")
    _, timed = _load(tmp_path, "{passthrough: [a]}",
                     ["data.split.method=time", "data.split.time_column=ts"])

    assert spec.data.reserved_columns == ["y"]
    assert timed.data.reserved_columns == ["y", "ts"]
