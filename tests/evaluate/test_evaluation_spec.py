"""The evaluation section's bad inputs: each error names the file, the field and what was
expected, and nothing runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainforge.config import load_spec
from trainforge.errors import SpecError
from trainforge.pipeline import gate_metric_names, load_checked_spec

SPEC = """
name: demo
data: {source: rows.csv, target: is_fraud}
features: {transforms: [{type: standardize, columns: [amount]}], exclude: [region]}
model: {task: binary}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "rows.csv").write_text("amount,region,is_fraud\n1.5,north,0\n2.5,south,1\n")
    path = tmp_path / "pipeline.yaml"
    path.write_text(SPEC)
    return path


def problems(path: Path, overrides: list[str]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_checked_spec(path, overrides)
    return caught.value.problems


def test_the_evaluation_keys_load(project: Path) -> None:
    spec = load_checked_spec(project, [
        "evaluation.threshold=auto", "evaluation.threshold_by=recall",
        "evaluation.threshold_target=0.9", "evaluation.slices=[region, amount]",
        "evaluation.cross_validation=3", "evaluation.plots=false"]).evaluation
    assert (spec.threshold, spec.threshold_by, spec.threshold_target) == ("auto", "recall", 0.9)
    assert (spec.slices, spec.cross_validation, spec.plots) == (["region", "amount"], 3, False)
    assert spec.fixed_threshold == 0.5
    assert load_checked_spec(project, ["evaluation.threshold=auto"]).evaluation.choose_by == "f1"


def test_an_unknown_slice_column_names_the_field_and_the_column(project: Path) -> None:
    assert problems(project, ["evaluation.slices=[region, regoin]"]) == [
        f"{project}: evaluation.slices: 'regoin' is not a column of data file "
        f"{project.parent / 'rows.csv'}; did you mean 'region'?; its columns are: amount, "
        "region, is_fraud"]


def test_cross_validation_needs_two_folds_or_more(project: Path) -> None:
    assert problems(project, ["evaluation.cross_validation=1"]) == [
        f"{project}: evaluation.cross_validation: expected an integer >= 2, got 1"]


@pytest.mark.parametrize("target", ["0", "1", "1.5", "-0.2"])
def test_a_threshold_target_lies_strictly_between_0_and_1(project: Path, target: str) -> None:
    assert problems(project, ["evaluation.threshold=auto", "evaluation.threshold_by=precision",
                              f"evaluation.threshold_target={target}"]) == [
        f"{project}: evaluation.threshold_target: expected a number > 0 and < 1, got "
        f"{target}"]


def test_threshold_auto_applies_to_a_binary_task_only(project: Path) -> None:
    assert problems(project, ["evaluation.threshold=auto", "model.task=multiclass"]) == [
        f"{project}: evaluation.threshold: auto applies to a binary task only; model.task is "
        "'multiclass'"]


@pytest.mark.parametrize(("overrides", "message"), [
    (["evaluation.threshold=high"], "evaluation.threshold: expected a number > 0 and < 1, or "
                                    "auto; got 'high'"),
    (["evaluation.threshold=1.0"], "evaluation.threshold: expected a number > 0 and < 1, or "
                                   "auto; got 1.0"),
    (["evaluation.threshold=auto", "evaluation.threshold_by=recall"],
     "evaluation: threshold_by recall needs threshold_target (the recall to reach, e.g. 0.9)"),
    (["evaluation.threshold_target=0.9"],
     "evaluation: threshold_target applies to threshold: auto only; threshold is 0.5"),
    (["evaluation.threshold_by=recall", "evaluation.threshold_target=0.9"],
     "evaluation: threshold_by and threshold_target apply to threshold: auto only; threshold "
     "is 0.5"),
    (["evaluation.threshold=auto", "evaluation.threshold_target=0.9"],
     "evaluation: threshold_target applies to threshold_by precision or recall; threshold_by "
     "is f1"),
])
def test_threshold_settings_that_do_not_fit_together(
    project: Path, overrides: list[str], message: str
) -> None:
    assert problems(project, overrides) == [f"{project}: {message}"]


def test_slice_gaps_may_be_gated_when_slices_are_configured(project: Path) -> None:
    assert "test_slice_gap_roc_auc" in gate_metric_names("binary", slices=True)
    assert "test_slice_gap_roc_auc" not in gate_metric_names("binary")
    spec = load_checked_spec(project, ["evaluation.slices=[region]", (
        "evaluation.gates=[{metric: test_slice_gap_roc_auc, max: 0.1}]")])
    assert spec.evaluation.gates[0].metric == "test_slice_gap_roc_auc"
    assert "evaluation.gates.0.metric" in problems(project, [
        "evaluation.gates=[{metric: test_slice_gap_roc_auc, max: 0.1}]"])[0]


def test_load_spec_alone_accepts_a_slice_column_it_cannot_check(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(SPEC.replace("rows.csv", "missing/*.csv"))
    assert load_spec(path, ["evaluation.slices=[anything]"]).evaluation.slices == ["anything"]
