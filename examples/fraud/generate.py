#!/usr/bin/env python
"""Seeded synthetic card-transaction data set for the trainforge fraud demo.

Writes one Parquet file per day (``transactions-YYYY-MM-DD.parquet``, starting
2026-01-01). Every value is drawn from numpy generators seeded only by ``seed``
(plus fixed stream/day indices), so the same arguments always give the same
rows; nothing depends on the wall clock, the machine or the process.

The label ``is_fraud`` comes from a hidden non-linear rule plus label noise.

Usage::

    python examples/fraud/generate.py --out examples/fraud/data --days 30 --rows 300000 --seed 7

Re-running with the same arguments is a no-op when every file is already there
(pass ``--force`` to rewrite them).

New days arrive with ``--append-days N``: the next N days after the last file, drawn
from the same customers and seed (each new day seeded by its own index), leaving every
existing file untouched, as a daily feed would::

    python examples/fraud/generate.py --out examples/fraud/data --append-days 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# Bump whenever the generated data changes, so existing files are regenerated.
GENERATOR_VERSION = 1
START_DATE = dt.date(2026, 1, 1)
FILE_PREFIX = "transactions-"
METADATA_KEY = b"trainforge.fraud_generator"
DEFAULT_OUT = Path(__file__).resolve().parent / "data"

HOME_COUNTRY = "US"
FOREIGN_COUNTRIES = np.array(["CA", "MX", "GB", "DE", "FR", "BR", "NG"])
FOREIGN_WEIGHTS = np.array([0.28, 0.22, 0.15, 0.10, 0.09, 0.09, 0.07])

# category: (frequency, median amount in USD, log-sd of amount, share abroad,
#            device mix over (pos, web, mobile_app, atm))
CATEGORIES: dict[str, tuple[float, float, float, float, tuple[float, float, float, float]]] = {
    "grocery": (0.22, 42.0, 0.55, 0.03, (0.85, 0.05, 0.10, 0.0)),
    "restaurants": (0.17, 28.0, 0.60, 0.05, (0.82, 0.04, 0.14, 0.0)),
    "online_retail": (0.15, 55.0, 0.85, 0.08, (0.0, 0.55, 0.45, 0.0)),
    "fuel": (0.10, 48.0, 0.35, 0.04, (0.97, 0.0, 0.03, 0.0)),
    "gaming": (0.06, 22.0, 0.90, 0.12, (0.0, 0.40, 0.60, 0.0)),
    "pharmacy": (0.06, 24.0, 0.70, 0.03, (0.85, 0.08, 0.07, 0.0)),
    "utilities": (0.06, 105.0, 0.45, 0.01, (0.04, 0.56, 0.40, 0.0)),
    "electronics": (0.05, 240.0, 0.95, 0.08, (0.45, 0.38, 0.17, 0.0)),
    "travel": (0.05, 320.0, 0.90, 0.30, (0.25, 0.45, 0.30, 0.0)),
    "cash_withdrawal": (0.05, 80.0, 0.60, 0.05, (0.0, 0.0, 0.0, 1.0)),
    "jewelry": (0.03, 380.0, 0.85, 0.07, (0.65, 0.25, 0.10, 0.0)),
}
CATEGORY_NAMES = np.array(list(CATEGORIES))
RISKY_CATEGORIES = ("electronics", "jewelry", "gaming", "online_retail")
DEVICE_TYPES = np.array(["pos", "web", "mobile_app", "atm"])
CARD_PRESENT_DEVICES = ("pos", "atm")

# Relative transaction volume per UTC hour (quiet at night, busy around noon/evening).
HOURLY_PROFILE = np.array(
    [1.2, 0.8, 0.6, 0.5, 0.5, 0.7, 1.3, 2.4, 3.6, 4.4, 5.0, 5.6,
     6.2, 5.9, 5.4, 5.2, 5.4, 6.0, 6.4, 6.0, 5.0, 3.8, 2.6, 1.8]
)

# Hard bounds, mirrored in contract.yaml.
AMOUNT_MIN, AMOUNT_MAX = 0.5, 25_000.0
MAX_ACCOUNT_AGE = 9_000
MAX_PRIOR_24H, MAX_PRIOR_7D = 50, 200
MAX_DISTANCE_KM = 19_000.0
MIN_AVG_AMOUNT, MAX_AVG_AMOUNT = 1.0, 5_000.0

SCHEMA = pa.schema(
    [
        ("transaction_id", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("amount", pa.float64()),
        ("merchant_category", pa.string()),
        ("country", pa.string()),
        ("hour", pa.int64()),
        ("device_type", pa.string()),
        ("card_present", pa.int64()),
        ("account_age_days", pa.int64()),
        ("prior_txn_24h", pa.int64()),
        ("prior_txn_7d", pa.int64()),
        ("distance_from_home_km", pa.float64()),
        ("customer_avg_amount", pa.float64()),
        ("is_fraud", pa.int64()),
    ]
)

# Hidden rule: intercept chosen so the overall fraud rate lands near 2%.
_INTERCEPT = -6.76
_LOGIT_NOISE = 0.5


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _day_counts(rows: int, days: int, seed: int) -> np.ndarray:
    """Rows per day: about rows/days each, a little busier on weekends, summing to rows."""
    rng = np.random.default_rng([seed, 0xC0])
    dates = [START_DATE + dt.timedelta(days=d) for d in range(days)]
    weekend = np.array([d.weekday() >= 5 for d in dates], dtype=float)
    weights = 1.0 + 0.05 * weekend + rng.uniform(-0.05, 0.05, size=days)
    exact = rows * weights / weights.sum()
    counts = np.floor(exact).astype(np.int64)
    remainder = rows - int(counts.sum())
    if remainder:
        order = np.argsort(-(exact - counts), kind="stable")
        counts[order[:remainder]] += 1
    return counts


def _customers(rows: int, seed: int) -> dict[str, np.ndarray]:
    """A fixed customer population shared by every day."""
    rng = np.random.default_rng([seed, 0xCC])
    n = max(200, rows // 20)
    new = rng.random(n) < 0.10
    age = np.where(
        new,
        rng.integers(0, 40, size=n),
        np.minimum(45 + rng.gamma(1.6, 900.0, size=n), MAX_ACCOUNT_AGE - 400),
    ).astype(np.int64)
    spend = rng.lognormal(0.0, 0.45, size=n)  # customer's spending level
    avg_amount = np.round(
        np.clip(70.0 * spend * rng.lognormal(0.0, 0.12, size=n), MIN_AVG_AMOUNT, MAX_AVG_AMOUNT), 2
    )
    activity = rng.gamma(2.0, 0.9, size=n) + 0.1  # transactions per day
    return {"age": age, "spend": spend, "avg_amount": avg_amount, "activity": activity}


def _fraud_logit(
    amount: np.ndarray,
    avg_amount: np.ndarray,
    card_present: np.ndarray,
    hour: np.ndarray,
    age: np.ndarray,
    category: np.ndarray,
    foreign: np.ndarray,
    prior_24h: np.ndarray,
    prior_7d: np.ndarray,
    distance: np.ndarray,
) -> np.ndarray:
    cnp = 1.0 - card_present
    log_ratio = np.log(amount / avg_amount)
    big_vs_usual = _sigmoid(4.0 * (log_ratio - np.log(3.0)))
    tiny = _sigmoid(-4.0 * (np.log(amount) - np.log(2.5)))
    night = ((hour >= 22) | (hour < 5)).astype(float)
    new_account = (age < 30).astype(float)
    risky = np.isin(category, RISKY_CATEGORIES).astype(float)
    burst = _sigmoid(1.5 * (prior_24h - 1.5 * prior_7d / 7.0 - 5.0))
    far = np.nan_to_num(_sigmoid(2.0 * (np.log1p(distance) - np.log(800.0))), nan=0.0)

    logit = (
        _INTERCEPT
        + 5.4 * big_vs_usual * cnp
        + 4.8 * tiny * cnp
        + 5.4 * night * new_account
        + 4.8 * risky * foreign
        + 4.2 * burst * (1.0 - 0.5 * card_present)
        + 4.2 * far * card_present * (1.0 - foreign)
        - 1.2 * big_vs_usual * card_present
        - 1.2 * foreign * (1.0 - risky)
    )
    return logit


def _generate_day(day: int, n: int, seed: int, cust: dict[str, np.ndarray]) -> pa.Table:
    rng = np.random.default_rng([seed, 0xDA, day])
    date = START_DATE + dt.timedelta(days=day)

    cid = rng.integers(0, cust["age"].shape[0], size=n)

    # Time of day.
    hour = rng.choice(24, size=n, p=HOURLY_PROFILE / HOURLY_PROFILE.sum())
    micros = hour * 3_600_000_000 + rng.integers(0, 3_600_000_000, size=n)
    order = np.argsort(micros, kind="stable")
    cid, hour, micros = cid[order], hour[order], micros[order]
    day_start = np.datetime64(date.isoformat(), "us")
    ts = day_start + micros.astype("timedelta64[us]")

    # Merchant category, country, device.
    cat_freq = np.array([v[0] for v in CATEGORIES.values()])
    cat_idx = rng.choice(len(CATEGORIES), size=n, p=cat_freq / cat_freq.sum())
    category = CATEGORY_NAMES[cat_idx]

    abroad_share = np.array([v[3] for v in CATEGORIES.values()])[cat_idx]
    foreign = rng.random(n) < abroad_share
    foreign_country = FOREIGN_COUNTRIES[
        rng.choice(len(FOREIGN_COUNTRIES), size=n, p=FOREIGN_WEIGHTS / FOREIGN_WEIGHTS.sum())
    ]
    country = np.where(foreign, foreign_country, HOME_COUNTRY)

    device_mix = np.array([v[4] for v in CATEGORIES.values()], dtype=float)
    device_mix /= device_mix.sum(axis=1, keepdims=True)
    cum = np.cumsum(device_mix[cat_idx], axis=1)
    dev_idx = np.minimum((rng.random(n)[:, None] > cum).sum(axis=1), len(DEVICE_TYPES) - 1)
    device = DEVICE_TYPES[dev_idx]
    card_present = np.isin(device, CARD_PRESENT_DEVICES).astype(np.int64)

    # Amounts: log-normal by category, scaled by the customer's spending level,
    # with occasional unusually large purchases.
    median = np.array([v[1] for v in CATEGORIES.values()])[cat_idx]
    sigma = np.array([v[2] for v in CATEGORIES.values()])[cat_idx]
    amount = median * cust["spend"][cid] * np.exp(sigma * rng.standard_normal(n))
    spike = rng.random(n) < 0.04
    amount = np.where(spike, amount * rng.lognormal(1.4, 0.6, size=n), amount)
    micro = (
        (card_present == 0)
        & np.isin(category, ("gaming", "online_retail", "utilities"))
        & (rng.random(n) < 0.08)
    )
    amount = np.where(micro, rng.uniform(0.5, 5.0, size=n), amount)
    cash = category == "cash_withdrawal"  # ATMs dispense multiples of $20
    amount = np.where(cash, np.maximum(20.0, np.round(amount / 20.0) * 20.0), amount)
    amount = np.round(np.clip(amount, AMOUNT_MIN, AMOUNT_MAX), 2)

    # Customer history.
    age = np.minimum(cust["age"][cid] + day, MAX_ACCOUNT_AGE)
    avg_amount = cust["avg_amount"][cid]
    activity = cust["activity"][cid]
    prior_7d = rng.poisson(7.0 * activity)
    prior_24h = rng.binomial(prior_7d, 1.0 / 7.0)
    bursting = rng.random(n) < 0.03
    extra = np.where(bursting, 3 + rng.poisson(5.0, size=n), 0)
    prior_24h = np.minimum(prior_24h + extra, MAX_PRIOR_24H)
    prior_7d = np.minimum(prior_7d + extra, MAX_PRIOR_7D)  # still >= prior_24h

    # Distance from home: local, domestic trips, abroad; ~1% missing (no geolocation).
    trip = rng.random(n) < 0.06
    local = rng.lognormal(np.log(6.0), 1.0, size=n)
    domestic_trip = rng.lognormal(np.log(400.0), 0.9, size=n)
    abroad = rng.lognormal(np.log(2500.0), 0.7, size=n)
    distance = np.where(foreign, abroad, np.where(trip, domestic_trip, local))
    distance = np.round(np.minimum(distance, MAX_DISTANCE_KM), 1)
    distance[rng.random(n) < 0.01] = np.nan

    logit = _fraud_logit(
        amount, avg_amount, card_present, hour, age, category,
        foreign.astype(float), prior_24h, prior_7d, distance,
    ) + rng.normal(0.0, _LOGIT_NOISE, size=n)
    is_fraud = (rng.random(n) < _sigmoid(logit)).astype(np.int64)

    stamp = date.strftime("%Y%m%d")
    suffix = rng.integers(0, 16**6, size=n)
    txn_id = [f"tx-{stamp}-{i:07d}-{s:06x}" for i, s in zip(range(n), suffix.tolist())]

    columns = {
        "transaction_id": pa.array(txn_id, pa.string()),
        "ts": pa.array(ts, pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")),
        "amount": pa.array(amount, pa.float64()),
        "merchant_category": pa.array(category, pa.string()),
        "country": pa.array(country, pa.string()),
        "hour": pa.array(hour.astype(np.int64), pa.int64()),
        "device_type": pa.array(device, pa.string()),
        "card_present": pa.array(card_present, pa.int64()),
        "account_age_days": pa.array(age.astype(np.int64), pa.int64()),
        "prior_txn_24h": pa.array(prior_24h.astype(np.int64), pa.int64()),
        "prior_txn_7d": pa.array(prior_7d.astype(np.int64), pa.int64()),
        "distance_from_home_km": pa.array(distance, pa.float64(), from_pandas=True),
        "customer_avg_amount": pa.array(avg_amount, pa.float64()),
        "is_fraud": pa.array(is_fraud, pa.int64()),
    }
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def _params(days: int, rows: int, seed: int) -> bytes:
    return json.dumps(
        {"generator_version": GENERATOR_VERSION, "days": days, "rows": rows, "seed": seed},
        sort_keys=True,
    ).encode()


def file_paths(out_dir: Path, days: int) -> list[Path]:
    out_dir = Path(out_dir)
    return [
        out_dir / f"{FILE_PREFIX}{(START_DATE + dt.timedelta(days=d)).isoformat()}.parquet"
        for d in range(days)
    ]


def _up_to_date(paths: list[Path], params: bytes) -> bool:
    """True when every file exists and was written with these same parameters."""
    for path in paths:
        if not path.is_file():
            return False
        try:
            meta = pq.read_schema(path).metadata or {}
        except Exception:  # unreadable / foreign file: regenerate
            return False
        if meta.get(METADATA_KEY) != params:
            return False
    return True


def _write_atomic(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        pq.write_table(
            table,
            tmp,
            row_group_size=max(1, table.num_rows),
            version="2.6",
            compression="snappy",
            use_dictionary=True,
            write_statistics=True,
            data_page_version="1.0",
            store_schema=True,
        )
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def generate(
    out_dir: Path, days: int = 30, rows: int = 300_000, seed: int = 7, force: bool = False
) -> list[Path]:
    """Write ``days`` daily Parquet files totalling ``rows`` rows; return their paths.

    Fully determined by ``(days, rows, seed)``. When every file already exists and
    was written with the same parameters, nothing is rewritten unless ``force``.
    """
    if days < 1:
        raise ValueError("days must be >= 1")
    if rows < days:
        raise ValueError("rows must be >= days")
    out_dir = Path(out_dir)
    paths = file_paths(out_dir, days)
    params = _params(days, rows, seed)
    if not force and _up_to_date(paths, params):
        return paths

    out_dir.mkdir(parents=True, exist_ok=True)
    counts = _day_counts(rows, days, seed)
    cust = _customers(rows, seed)
    for day, (path, n) in enumerate(zip(paths, counts.tolist())):
        table = _generate_day(day, n, seed, cust)
        table = table.replace_schema_metadata({METADATA_KEY: params})
        _write_atomic(table, path)
    return paths


def append_days(out_dir: Path, extra: int) -> list[Path]:
    """Write the ``extra`` days after the last file in ``out_dir``; return their paths.

    The base parameters (days, rows, seed) come from the first file's metadata, so new
    days have about as many rows as the base's days and the same customer population.
    """
    if extra < 1:
        raise ValueError("append at least one day")
    existing = sorted(Path(out_dir).glob(f"{FILE_PREFIX}*.parquet"))
    if not existing:
        raise ValueError(f"{out_dir}: no days to append to; generate the first days first")
    params = (pq.read_schema(existing[0]).metadata or {}).get(METADATA_KEY)
    if params is None:
        raise ValueError(f"{existing[0]}: not written by this generator")
    base = json.loads(params)
    cust = _customers(base["rows"], base["seed"])
    per_day = base["rows"] / base["days"]
    paths = file_paths(out_dir, len(existing) + extra)[len(existing):]
    for day, path in enumerate(paths, start=len(existing)):
        rng = np.random.default_rng([base["seed"], 0xD0, day])
        rows = max(1, int(round(per_day * rng.uniform(0.95, 1.05))))
        table = _generate_day(day, rows, base["seed"], cust)
        _write_atomic(table.replace_schema_metadata({METADATA_KEY: params}), path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the synthetic card-fraud data set.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rows", type=int, default=300_000, help="total rows over all days")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--force", action="store_true", help="rewrite files that already exist")
    parser.add_argument("--append-days", type=int, metavar="N",
                        help="write the N days after the last file in --out, keeping the rest")
    args = parser.parse_args(argv)
    if args.append_days is not None:
        added = append_days(args.out, args.append_days)
        print(f"appended {len(added)} day(s) to {args.out}: {added[0].name} .. {added[-1].name}")
        return 0

    params = _params(args.days, args.rows, args.seed)
    paths = file_paths(args.out, args.days)
    skipped = not args.force and _up_to_date(paths, params)
    start = time.perf_counter()
    generate(args.out, days=args.days, rows=args.rows, seed=args.seed, force=args.force)
    elapsed = time.perf_counter() - start
    labels = np.concatenate(
        [pq.read_table(p, columns=["is_fraud"]).column(0).to_numpy() for p in paths]
    )
    summary = (
        f"{len(paths)} files, {labels.size} rows, fraud rate {labels.mean():.2%}, seed {args.seed}"
    )
    if skipped:
        print(f"fraud data up to date in {args.out}: {summary} (use --force to rewrite)")
    else:
        print(f"wrote fraud data to {args.out}: {summary}, in {elapsed:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
