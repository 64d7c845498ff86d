"""The export decision as a pure function: parity for fp32, the metric budget for int8, and
no reduced variant both slower and larger than the fp32 one."""

from __future__ import annotations

from trainforge.export import judge_variant

BASE = {"parity_tolerance": 1e-5, "metric_budget": 0.01}


def judge(**figures):  # type: ignore[no-untyped-def]
    values = {"max_abs_diff": 0.0, "metric_drop": None, "latency_ms": 1.0,
              "size_bytes": 1000, "baseline": None, **figures}
    return judge_variant(**values, **BASE)


def test_fp32_within_the_tolerance_is_accepted_and_beyond_it_rejected():
    assert judge(max_abs_diff=1e-5) is None
    assert judge(max_abs_diff=2e-5) == "parity: max abs diff 2e-05 > 1e-05"
    assert judge(max_abs_diff=float("nan")).startswith("parity")


def test_int8_is_held_to_the_metric_budget_not_to_parity():
    assert judge(max_abs_diff=0.01, metric_drop=0.01) is None
    assert judge(max_abs_diff=0.01, metric_drop=0.02) == "metric drop 0.02 > budget 0.01"


def test_a_reduced_variant_slower_and_larger_than_fp32_is_rejected_but_either_alone_is_not():
    fp32 = (1.0, 1000)
    int8 = {"max_abs_diff": 0.01, "metric_drop": 0.0, "baseline": fp32}
    assert judge(**int8, latency_ms=2.0, size_bytes=900) is None
    assert judge(**int8, latency_ms=0.5, size_bytes=2000) is None
    assert judge(**int8, latency_ms=1.0, size_bytes=2000) is None
    assert judge(**int8, latency_ms=2.0, size_bytes=2000) == (
        "slower (2 ms > 1 ms) and larger (2000 > 1000 bytes) than fp32")


def test_fp32_variants_are_judged_on_parity_alone():
    assert judge(latency_ms=50.0, size_bytes=10**6) is None
