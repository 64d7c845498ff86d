"""Tests for the synthetic card-fraud data generator (examples/fraud/generate.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from example_scripts import EXAMPLES, load_example_script

FRAUD_DIR = EXAMPLES / "fraud"
DAYS, ROWS, SEED = 3, 3000, 7


gen = load_example_script("fraud", "generate.py")


def _read(paths: list[Path]) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[Path]:
    return gen.generate(tmp_path_factory.mktemp("fraud"), days=DAYS, rows=ROWS, seed=SEED)


@pytest.fixture(scope="module")
def frame(generated) -> pd.DataFrame:
    return _read(generated)


def test_files_and_row_count(generated, frame):
    assert [p.name for p in generated] == [
        "transactions-2026-01-01.parquet",
        "transactions-2026-01-02.parquet",
        "transactions-2026-01-03.parquet",
    ]
    assert all(p.is_file() for p in generated)
    assert len(frame) == ROWS
    per_day = [len(pd.read_parquet(p)) for p in generated]
    assert all(abs(n - ROWS / DAYS) <= 0.1 * ROWS / DAYS for n in per_day)
    assert sorted(os.listdir(generated[0].parent)) == [p.name for p in generated]  # no temp files


def test_same_seed_gives_identical_data(generated, frame, tmp_path):
    again = gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED)
    pd.testing.assert_frame_equal(_read(again), frame)
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in generated]


def test_other_seed_gives_other_data(frame, tmp_path):
    other = _read(gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED + 1))
    assert len(other) == ROWS
    assert not other["amount"].equals(frame["amount"])


def test_fraud_rate(frame):
    assert 0.005 <= frame["is_fraud"].mean() <= 0.05
    assert set(frame["is_fraud"].unique()) == {0, 1}


def test_columns_ranges_and_consistency(generated, frame):
    assert list(frame.columns) == [
        "transaction_id", "ts", "amount", "merchant_category", "country", "hour",
        "device_type", "card_present", "account_age_days", "prior_txn_24h", "prior_txn_7d",
        "distance_from_home_km", "customer_avg_amount", "is_fraud",
    ]
    assert frame["transaction_id"].is_unique
    assert str(frame["ts"].dt.tz) == "UTC"
    assert (frame["ts"].dt.hour == frame["hour"]).all()
    assert frame["hour"].between(0, 23).all()
    for day, path in enumerate(generated):
        ts = pd.read_parquet(path)["ts"]
        start = pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(days=day)
        assert (ts >= start).all() and (ts < start + pd.Timedelta(days=1)).all()
        assert ts.is_monotonic_increasing
    assert (frame["amount"] > 0).all()
    assert (frame["customer_avg_amount"] > 0).all()
    assert (frame["account_age_days"] >= 0).all()
    assert (frame["prior_txn_24h"] >= 0).all()
    assert (frame["prior_txn_7d"] >= frame["prior_txn_24h"]).all()
    assert (frame["distance_from_home_km"].dropna() >= 0).all()
    present = frame["device_type"].isin(["pos", "atm"]).astype(int)
    assert (frame["card_present"] == present).all()
    assert set(frame["device_type"]) == {"pos", "web", "mobile_app", "atm"}
    assert 8 <= frame["merchant_category"].nunique() <= 12
    assert frame["country"].value_counts(normalize=True).idxmax() == "US"
    assert frame["country"].value_counts(normalize=True)["US"] > 0.8


def test_nulls_only_in_distance(frame):
    nulls = frame.isna().sum()
    assert nulls.drop("distance_from_home_km").sum() == 0
    assert 0 < nulls["distance_from_home_km"] <= 0.03 * len(frame)


def test_data_satisfies_contract(frame):
    contract = yaml.safe_load((FRAUD_DIR / "contract.yaml").read_text())
    assert list(contract["columns"]) == list(frame.columns)
    kinds = {"int": "i", "float": "f", "datetime": "M"}
    for name, rule in contract["columns"].items():
        col = frame[name]
        if rule["type"] == "string":
            assert pd.api.types.is_string_dtype(col), name
        else:
            assert col.dtype.kind == kinds[rule["type"]], name
        if not rule.get("nullable", False):
            assert col.notna().all(), name
        if "min" in rule:
            assert col.min() >= rule["min"], name
        if "max" in rule:
            assert col.max() <= rule["max"], name
        if "allowed" in rule:
            assert set(col.dropna().unique()) <= set(rule["allowed"]), name


def test_rerun_skips_unless_forced(tmp_path):
    paths = gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED)
    old = 1_000_000_000
    for p in paths:
        os.utime(p, ns=(old, old))
    assert gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED) == paths
    assert [p.stat().st_mtime_ns for p in paths] == [old] * DAYS
    # Other parameters, or --force, regenerate.
    gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED, force=True)
    assert all(p.stat().st_mtime_ns != old for p in paths)
    for p in paths:
        os.utime(p, ns=(old, old))
    gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED + 1)
    assert all(p.stat().st_mtime_ns != old for p in paths)


def test_missing_file_is_regenerated(tmp_path):
    paths = gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED)
    before = paths[1].read_bytes()
    paths[1].unlink()
    gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED)
    assert paths[1].read_bytes() == before


def test_interrupted_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def broken_write(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1 half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(gen.pq, "write_table", broken_write)
    with pytest.raises(KeyboardInterrupt):
        gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED)
    assert list(tmp_path.iterdir()) == []


def test_cli(tmp_path):
    cmd = [sys.executable, str(FRAUD_DIR / "generate.py"), "--out", str(tmp_path),
           "--days", "2", "--rows", "1000", "--seed", "3"]
    first = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert len(first.stdout.strip().splitlines()) == 1
    assert "1000 rows" in first.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "transactions-2026-01-01.parquet",
        "transactions-2026-01-02.parquet",
    ]
    second = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "up to date" in second.stdout


def test_append_days_adds_the_next_days_and_keeps_the_others(tmp_path: Path) -> None:
    first = gen.generate(tmp_path, days=DAYS, rows=ROWS, seed=SEED)
    before = {p.name: p.read_bytes() for p in first}

    added = gen.append_days(tmp_path, 2)

    assert [p.name for p in added] == ["transactions-2026-01-04.parquet",
                                       "transactions-2026-01-05.parquet"]
    assert {p.name: p.read_bytes() for p in first} == before
    frame = _read(added)
    assert frame["ts"].dt.date.astype(str).unique().tolist() == ["2026-01-04",
                                                                 "2026-01-05"]
    assert 0.8 * ROWS / DAYS * 2 < len(frame) < 1.2 * ROWS / DAYS * 2


def test_append_days_is_deterministic_and_refuses_an_empty_folder(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        gen.generate(tmp_path / folder, days=DAYS, rows=ROWS, seed=SEED)
    one, two = gen.append_days(tmp_path / "a", 1), gen.append_days(tmp_path / "b", 1)

    assert one[0].read_bytes() == two[0].read_bytes()
    with pytest.raises(ValueError, match="no days to append to"):
        gen.append_days(tmp_path / "empty", 1)
