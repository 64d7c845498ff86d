"""Promotion gates as pure decisions: each passes or fails on the figures given, and says why."""

from __future__ import annotations

import math

import pytest

from trainforge.config import GateSpec, MetricLimitSpec
from trainforge.registry import check_gates
from trainforge.registry._promotion import (
    export_parity_gate,
    max_drop_gate,
    slice_gap_gate,
    threshold_gates,
)

AUC = MetricLimitSpec(metric="test_roc_auc", max=0.01)


def test_thresholds_pass_within_limits_and_fail_outside_or_unmeasured() -> None:
    outcomes = threshold_gates({"test_roc_auc": 0.9, "test_log_loss": 0.5, "x": math.nan}, [
        GateSpec(metric="test_roc_auc", min=0.85), GateSpec(metric="test_log_loss", max=0.3),
        GateSpec(metric="x", min=0), GateSpec(metric="missing", min=0)])
    assert [o.passed for o in outcomes] == [True, False, False, False]
    assert outcomes[1].message == "test_log_loss <= 0.3: got 0.5"
    assert outcomes[1].figures == {"min": None, "max": 0.3, "value": 0.5}
    assert [o.message for o in outcomes[2:]] == [
        "x: is NaN", "missing: not measured (have test_log_loss, test_roc_auc, x)"]


def test_the_gate_step_and_promotion_decide_a_threshold_alike() -> None:
    metrics = {"test_roc_auc": 0.8, "nan": math.nan}
    gates = [GateSpec(metric="test_roc_auc", min=0.85), GateSpec(metric="test_roc_auc", min=0.5),
             GateSpec(metric="nan", max=1), GateSpec(metric="missing", min=0)]
    outcomes = threshold_gates(metrics, gates)
    step = check_gates(metrics, gates)
    assert step.failures == tuple(o.message for o in outcomes if not o.passed)
    assert [o.passed for o in outcomes] == [False, True, False, False] and not step.passed


@pytest.mark.parametrize(("ours", "theirs", "passed"), [
    (0.90, 0.905, True), (0.90, 0.92, False), (0.95, 0.90, True)])
def test_max_drop_compares_with_production(ours: float, theirs: float, passed: bool) -> None:
    outcome = max_drop_gate(AUC, {"test_roc_auc": ours}, {"test_roc_auc": theirs}, "4")
    assert outcome.passed is passed
    assert outcome.figures["drop"] == pytest.approx(theirs - ours)
    assert outcome.gate == "max_drop:test_roc_auc" and "version 4" in outcome.message


def test_max_drop_of_a_lower_is_better_metric_is_a_rise() -> None:
    limit = MetricLimitSpec(metric="test_log_loss", max=0.05)
    assert max_drop_gate(limit, {"test_log_loss": 0.30}, {"test_log_loss": 0.20}, "1").passed \
        is False
    assert max_drop_gate(limit, {"test_log_loss": 0.20}, {"test_log_loss": 0.30}, "1").passed


def test_max_drop_without_production_passes_saying_so() -> None:
    outcome = max_drop_gate(AUC, {"test_roc_auc": 0.5}, None, None)
    assert outcome.passed and outcome.message == "no production version to compare with"


def test_max_drop_fails_when_a_model_could_not_be_measured() -> None:
    outcome = max_drop_gate(AUC, {"test_roc_auc": math.nan}, {"test_roc_auc": 0.9}, "1")
    assert not outcome.passed and "could not be measured" in outcome.message
    assert outcome.to_dict()["figures"]["candidate"] is None  # NaN is shown as JSON null


def test_slice_gap_reads_the_recorded_gap_and_fails_without_slices() -> None:
    limit = MetricLimitSpec(metric="roc_auc", max=0.1)
    assert slice_gap_gate(limit, {"test_slice_gap_roc_auc": 0.05}).passed
    too_wide = slice_gap_gate(limit, {"test_slice_gap_roc_auc": 0.2})
    assert not too_wide.passed and too_wide.figures == {"max": 0.1, "gap": 0.2}
    missing = slice_gap_gate(limit, {"test_roc_auc": 0.9})
    assert not missing.passed and "recorded no slices" in missing.message


def test_export_parity_wants_an_accepted_onnx_variant() -> None:
    missing = export_parity_gate(None)
    assert not missing.passed and "trainforge export" in missing.message
    rejected = export_parity_gate({"variants": [
        {"name": "onnx-fp32", "accepted": False, "reason": "max_abs_diff 3e-4 > 1e-5"},
        {"name": "torchscript", "accepted": True, "reason": None}]})
    assert not rejected.passed
    assert rejected.figures["rejected"] == {"onnx-fp32": "max_abs_diff 3e-4 > 1e-5"}
    accepted = export_parity_gate({"variants": [
        {"name": "onnx-fp32", "accepted": True, "reason": None},
        {"name": "onnx-int8", "accepted": False, "reason": "slower and larger than fp32"}]})
    assert accepted.passed and accepted.message == "accepted: onnx-fp32"
