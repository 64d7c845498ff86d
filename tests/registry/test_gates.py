from trainforge.config import GateSpec
from trainforge.registry import check_gates


def test_all_gates_within_bounds_pass():
    result = check_gates({"test_roc_auc": 0.9, "test_log_loss": 0.2},
                         [GateSpec(metric="test_roc_auc", min=0.85),
                          GateSpec(metric="test_log_loss", max=0.3)])
    assert result.passed and result.failures == ()


def test_each_failed_gate_says_what_was_required_and_what_was_got():
    result = check_gates({"test_roc_auc": 0.8, "test_log_loss": 0.5},
                         [GateSpec(metric="test_roc_auc", min=0.85),
                          GateSpec(metric="test_log_loss", max=0.3)])
    assert not result.passed
    assert result.failures == ("test_roc_auc >= 0.85: got 0.8", "test_log_loss <= 0.3: got 0.5")


def test_missing_or_nan_metric_fails_the_gate():
    result = check_gates({"test_roc_auc": float("nan")},
                         [GateSpec(metric="test_roc_auc", min=0.5), GateSpec(metric="x", min=0)])
    assert result.failures == ("test_roc_auc: is NaN", "x: not measured (have test_roc_auc)")


def test_no_gates_pass():
    assert check_gates({}, []).passed
