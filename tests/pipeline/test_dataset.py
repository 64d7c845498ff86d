"""The target column checked against the task (naming the data file and lines a user opens), and
encoded for the trainer: binary 0/1 from numbers, booleans or two text labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trainforge.config import DataSpec
from trainforge.errors import DataError
from trainforge.ingest import IngestResult, read_table
from trainforge.pipeline._dataset import binary_classes, check_target, encode_targets


def _data(**fields: object) -> DataSpec:
    return DataSpec.model_validate({"source": "rows.csv", "target": "label", **fields})


def _csv(tmp_path: Path, labels: list[str], name: str = "rows.csv") -> IngestResult:
    path = tmp_path / name
    path.write_text("amount,label\n" + "".join(f"{i},{v}\n" for i, v in enumerate(labels)))
    return read_table(str(path))


def _check(raw: IngestResult, task: str, **fields: object) -> None:
    check_target(raw.frame, _data(**fields), task, raw.locate, raw.source)


def test_a_missing_target_column_names_the_data_file_and_the_closest_column(
    tmp_path: Path,
) -> None:
    raw = _csv(tmp_path, ["0", "1"])

    with pytest.raises(DataError) as caught:
        check_target(raw.frame, _data(target="Label"), "binary", raw.locate, raw.source)

    assert str(caught.value) == (
        f"{raw.source}: data.target 'Label': no such column; did you mean 'label'?; the "
        "columns are: amount, label"
    )


def test_missing_target_values_name_their_lines(tmp_path: Path) -> None:
    raw = _csv(tmp_path, ["1", "", "0", ""])

    with pytest.raises(DataError) as caught:
        _check(raw, "binary")

    assert str(caught.value) == (
        f"{raw.source}: data.target 'label': 2 missing values (first: rows.csv line 3 (row 2), "
        "rows.csv line 5 (row 4))"
    )


def test_a_regression_target_needs_numbers(tmp_path: Path) -> None:
    raw = _csv(tmp_path, ["1.5", "abc", "2", "inf"])

    with pytest.raises(DataError, match=r"'label': a regression target needs finite numbers, "
                                        r"found 2 other values \(first: rows.csv line 3 "
                                        r"\(row 2\), rows.csv line 5 \(row 4\)\)"):
        _check(raw, "regression")


@pytest.mark.parametrize("labels", [["0", "1", "1"], ["true", "false"], ["1.0", "0.0"], ["0"]])
def test_zero_one_and_boolean_targets_need_no_positive_label(
    tmp_path: Path, labels: list[str]
) -> None:
    raw = _csv(tmp_path, labels)

    _check(raw, "binary")
    classes, (targets,) = encode_targets([raw.frame], _data(), "binary")

    assert classes == ()
    assert targets.dtype == np.float32
    assert targets.tolist() == [1.0 if v in ("1", "true", "1.0") else 0.0 for v in labels]


def test_two_text_labels_without_positive_label_name_both_and_the_field(tmp_path: Path) -> None:
    raw = _csv(tmp_path, ["benign", "malignant", "benign"])

    with pytest.raises(DataError) as caught:
        _check(raw, "binary")

    assert str(caught.value) == (
        f"{raw.source}: data.target 'label': holds 'benign' and 'malignant', not 0/1; set "
        "data.positive_label to the one that is the positive class"
    )


def test_two_numbers_other_than_zero_and_one_need_a_positive_label(tmp_path: Path) -> None:
    raw = _csv(tmp_path, ["2", "4", "2"])

    with pytest.raises(DataError, match="holds 2 and 4, not 0/1; set data.positive_label"):
        _check(raw, "binary")
    _check(raw, "binary", positive_label=4)


def test_more_than_two_values_name_the_count_and_where_the_first_ones_are(
    tmp_path: Path,
) -> None:
    labels = ["yes", "no", "yes", "maybe", "y", "n", "unsure", "no"]
    raw = _csv(tmp_path, labels)

    with pytest.raises(DataError) as caught:
        _check(raw, "binary", positive_label="yes")

    assert str(caught.value) == (
        f"{raw.source}: data.target 'label': a binary target holds 0/1, true/false, or two "
        "values and data.positive_label naming the positive one; found 6 values: "
        "'yes' (first: rows.csv line 2 (row 1)), 'no' (first: rows.csv line 3 (row 2)), "
        "'maybe' (first: rows.csv line 5 (row 4)), 'y' (first: rows.csv line 6 (row 5)), "
        "'n' (first: rows.csv line 7 (row 6)), ... (1 more)"
    )


def test_a_single_text_value_is_refused(tmp_path: Path) -> None:
    raw = _csv(tmp_path, ["fraud", "fraud"])

    with pytest.raises(DataError, match=r"found 1 value: 'fraud' \(first: rows.csv line 2"):
        _check(raw, "binary")
    with pytest.raises(DataError, match="holds 'fraud' only; a binary task needs a second"):
        _check(raw, "binary", positive_label="fraud")


def test_a_positive_label_that_is_no_value_lists_the_values(tmp_path: Path) -> None:
    raw = _csv(tmp_path, ["benign", "malignant"])

    with pytest.raises(DataError) as caught:
        _check(raw, "binary", positive_label="Malignant")

    assert str(caught.value) == (
        f"{raw.source}: data.target 'label': data.positive_label 'Malignant' is none of its "
        "values ('benign', 'malignant')"
    )


@pytest.mark.parametrize(
    ("values", "label", "expected"),
    [
        (["benign", "malignant", "benign"], "malignant", ("benign", "malignant")),
        (["yes", "no"], True, ("no", "yes")),
        (["ON", "off"], False, ("ON", "off")),
        ([7, 3, 3], "3", (7, 3)),
        (["1", "2"], 2, ("1", "2")),
        ([0, 1], 0, (1, 0)),
        ([True, False], True, (False, True)),
    ],
)
def test_the_positive_label_picks_the_positive_class(
    values: list[object], label: object, expected: tuple[object, object]
) -> None:
    assert binary_classes(pd.Series(values, dtype=object), label) == expected


def test_text_labels_encode_as_one_for_the_positive_class_in_every_split(tmp_path: Path) -> None:
    raw = _csv(tmp_path, ["benign", "malignant", "benign", "malignant", "benign"])
    data = _data(positive_label="malignant")
    _check(raw, "binary", positive_label="malignant")

    parts = [raw.frame.iloc[:2], raw.frame.iloc[2:4], raw.frame.iloc[4:]]
    classes, targets = encode_targets(parts, data, "binary")

    assert classes == ("benign", "malignant")
    assert [t.tolist() for t in targets] == [[0.0, 1.0], [0.0, 1.0], [0.0]]
    assert all(t.dtype == np.float32 for t in targets)


def test_multiclass_and_regression_encode_as_before() -> None:
    frame = pd.DataFrame({"label": ["b", "a", "c", "a"]})
    numbers = pd.DataFrame({"label": [1.5, 2.0]})

    classes, targets = encode_targets([frame.iloc[:3], frame.iloc[3:]], _data(), "multiclass")
    none, (values,) = encode_targets([numbers], _data(), "regression")

    assert classes == ("a", "b", "c") and [t.tolist() for t in targets] == [[1, 0, 2], [0]]
    assert none == () and values.dtype == np.float32 and values.tolist() == [1.5, 2.0]
