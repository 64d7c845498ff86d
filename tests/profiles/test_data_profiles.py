"""Profiles merge into the profile of the union of their rows; drift from profiles alone finds
shifts and schema changes, not new samples of the same data."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from trainforge.errors import DataError
from trainforge.profiles import DatasetProfile, compute_drift


def _table(seed: int, n: int = 100_000, shift: float = 0.0,
           weights: tuple[float, float, float] = (0.5, 0.3, 0.2)) -> pa.Table:
    rng = np.random.default_rng(seed)
    amount = rng.normal(100 + shift, 15, n)
    amount[rng.random(n) < 0.01] = np.nan
    return pa.table({"amount": amount, "hour": rng.integers(0, 24, n),
                     "kind": rng.choice(["pos", "web", "atm"], n, p=list(weights)),
                     "ts": pa.array(np.arange(n) * 1_000_000, pa.timestamp("us"))})


def _profile(table: pa.Table) -> DatasetProfile:
    return DatasetProfile.from_batches(table.to_batches(max_chunksize=30_000))


def test_profiles_of_parts_merge_into_the_profile_of_the_whole() -> None:
    one, two = _table(1), _table(2, n=50_000, shift=5)
    whole = pa.concat_tables([one, two])

    merged = _profile(one).merge(_profile(two))
    direct = _profile(whole)

    assert merged.rows == direct.rows == 150_000
    for name in ("amount", "hour"):
        m, d = merged.columns[name], direct.columns[name]
        assert (m.count, m.nulls, m.min, m.max) == (d.count, d.nulls, d.min, d.max)
        assert m.mean == pytest.approx(d.mean, rel=1e-9)
        assert m.std == pytest.approx(d.std, rel=1e-9)
    values = whole.column("amount").to_numpy()
    exact = np.nanquantile(values, [0.1, 0.5, 0.9])
    error = merged.columns["amount"].rank_error
    assert error is not None and error < 0.02
    for level, estimate in zip([0.1, 0.5, 0.9], merged.columns["amount"].quantiles
                               .get_quantiles([0.1, 0.5, 0.9]), strict=True):
        rank = float((values[~np.isnan(values)] <= estimate).mean())
        assert abs(rank - level) <= error, (level, estimate, exact)
    assert merged.columns["kind"].top() == direct.columns["kind"].top()
    assert round(merged.columns["hour"].distinct.get_estimate()) == 24
    assert merged.columns["amount"].nulls == int(np.isnan(values).sum())


def test_a_profile_round_trips_through_bytes_and_a_damaged_one_is_refused() -> None:
    profile = _profile(_table(3, n=10_000))

    again = DatasetProfile.from_bytes(profile.to_bytes(), "stored")

    assert again.summary() == profile.summary()
    with pytest.raises(DataError, match="stored: not a data profile"):
        DatasetProfile.from_bytes(b'{"rows": 1}', "stored")


def test_a_new_sample_of_the_same_data_does_not_drift() -> None:
    report = compute_drift(_profile(_table(1)), _profile(_table(2)))

    assert not report.drifted, report.summary()
    amount = next(c for c in report.columns if c.column == "amount")
    assert amount.statistics["psi"] < 0.01 and amount.statistics["ks"] < 0.02
    assert amount.rank_error_bound is not None and amount.rank_error_bound < 0.04


def test_a_shift_and_a_category_mix_change_drift() -> None:
    shifted = _table(2, shift=15, weights=(0.2, 0.3, 0.5))

    report = compute_drift(_profile(_table(1)), _profile(shifted))

    assert report.drifted_columns == ["amount", "kind"]
    amount = next(c for c in report.columns if c.column == "amount")
    assert amount.statistics["psi"] > 0.2
    assert amount.statistics["wasserstein"] == pytest.approx(1.0, abs=0.1)
    assert amount.statistics["ks"] == pytest.approx(0.38, abs=0.03)
    assert "amount: psi" in report.summary() and "kind: js" in report.summary()


def _normal(seed: int, n: int, mean: float = 0.0, std: float = 1.0) -> DatasetProfile:
    return _profile(pa.table({"x": np.random.default_rng(seed).normal(mean, std, n)}))


@pytest.mark.parametrize(("mean", "std", "drifts"), [
    (0.25, 1.0, True),  # a quarter of a standard deviation: PSI about 0.06
    (0.0, 1.5 ** 0.5, True),  # 1.5 times the variance
    (0.0, 1.0, False),  # a new sample of the same distribution
    (0.02, 1.0, False),  # a shift too small to report
])
def test_default_thresholds_report_what_evidently_reports_on_large_samples(
        mean: float, std: float, drifts: bool) -> None:
    report = compute_drift(_normal(1, 100_000), _normal(2, 100_000, mean, std))

    [column] = report.columns
    assert column.thresholds == {"psi": 0.2, "wasserstein": 0.1}
    assert column.drifted is drifts, column.statistics
    assert (column.statistics["psi"] > 0.2) is False  # what PSI alone would have missed


def test_default_thresholds_of_small_samples_are_the_ks_test_at_5_percent() -> None:
    shifted = compute_drift(_normal(1, 500), _normal(2, 400, mean=0.5))
    same = compute_drift(_normal(3, 500), _normal(4, 400))

    limit = 1.358 * ((500 + 400) / (500 * 400)) ** 0.5
    for report in (shifted, same):
        assert report.columns[0].thresholds == {"psi": 0.2, "ks": pytest.approx(limit, abs=1e-6)}
    assert shifted.drifted_columns == ["x"] and not same.drifted


def test_thresholds_per_column_and_defaults() -> None:
    reference, current = _profile(_table(1)), _profile(_table(2, shift=3))

    strict = compute_drift(reference, current, {"amount": {"ks": 0.05}})
    lenient = compute_drift(reference, current, {"*": {"psi": 5.0, "js": 5.0}})

    assert strict.drifted_columns == ["amount"]
    assert not lenient.drifted
    with pytest.raises(DataError, match=r"drift.thresholds.nope: no column 'nope'"):
        compute_drift(reference, current, {"nope": {"psi": 0.1}})
    with pytest.raises(DataError, match=r"drift.thresholds.amount.pval: unknown statistic"):
        compute_drift(reference, current, {"amount": {"pval": 0.1}})


def test_schema_drift_names_added_removed_and_retyped_columns() -> None:
    reference = _table(1, n=5_000)
    current = reference.drop_columns(["hour"]).append_column(
        "channel", pa.array(["x"] * 5_000)).set_column(
        1, "kind", pa.array(np.arange(5_000)))

    report = compute_drift(_profile(reference), _profile(current))

    assert report.drifted
    assert (report.added, report.removed) == (("channel",), ("hour",))
    assert report.retyped == (("kind", "string", "int64"),)
