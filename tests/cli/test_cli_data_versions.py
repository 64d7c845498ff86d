"""`trainforge data snapshot | list | show | diff | checkout | tag` (in-process)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasketches as ds
import numpy as np
import pandas as pd
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.profiles._column import KLL_K


def invoke(*args: str):
    return CliRunner().invoke(app, ["data", *args])


def _json(*args: str):
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_snapshot_list_show_diff_tag_and_checkout(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame({"x": [1, 2]}).to_parquet(data / "a.parquet")
    first = _json("snapshot", str(data), "--name", "feed")
    pd.DataFrame({"x": [3]}).to_parquet(data / "b.parquet")
    second = _json("snapshot", str(data), "--name", "feed")

    tagged = invoke("tag", first["id"][:8], "feed@day1")
    listed = _json("list")
    shown = _json("show", "feed@day1")
    diff = _json("diff", "feed@day1", "feed")
    checkout = invoke("checkout", "feed@day1", str(tmp_path / "out"))

    again = _json("snapshot", str(data), "--name", "feed")
    numbered = _json("show", "feed@1")
    renumbered = invoke("tag", "feed", "feed@1")

    assert (first["uploaded"], second["uploaded"], second["reused"]) == (1, 1, 1)
    assert (first["number"], second["number"], again["number"]) == ("feed@1", "feed@2", "feed@2")
    assert tagged.exit_code == 0 and tagged.stdout.strip() == f"feed@day1 -> {first['id']}"
    assert [(v["id"], v["tags"]) for v in listed] == [
        (second["id"], ["feed@2", "feed@latest"]), (first["id"], ["feed@1", "feed@day1"])]
    assert numbered["id"] == first["id"]
    assert renumbered.exit_code == 1 and "'feed@1': a tag of digits is a version's number" \
        in renumbered.stderr
    assert [f["name"] for f in shown["file_list"]] == ["a.parquet"] and shown["rows"] == 2
    assert [f["name"] for f in diff["added"]] == ["b.parquet"]
    assert diff["rows"] == {"old": 2, "new": 3}
    assert checkout.exit_code == 0, checkout.output
    assert (tmp_path / "out" / "a.parquet").read_bytes() == (data / "a.parquet").read_bytes()


def test_bad_references_and_sources_exit_1_naming_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame({"x": [1]}).to_parquet(data / "a.parquet")
    assert invoke("snapshot", str(data)).exit_code == 0

    missing = invoke("snapshot", str(tmp_path / "nothing-*.csv"))
    unknown = invoke("show", "nope@v1")
    busy = invoke("checkout", "nope", str(data))

    assert missing.exit_code == 1 and "matches no file" in missing.stderr
    assert unknown.exit_code == 1 and "'nope@v1': no stored id" in unknown.stderr
    assert busy.exit_code == 1 and "'nope'" in busy.stderr


def test_list_without_a_database_exits_1_and_creates_nothing(tmp_path: Path) -> None:
    result = invoke("list")

    assert result.exit_code == 1 and "TRAINFORGE_HOME" in result.stderr


def test_diff_names_the_columns_whose_schema_changed_or_values_drifted(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    data.mkdir()
    frame = pd.DataFrame({"amount": rng.normal(100, 15, 5_000),
                          "hour": rng.integers(0, 24, 5_000)})
    frame.to_parquet(data / "day-1.parquet")
    old = _json("snapshot", str(data), "--name", "feed")
    grown = frame.assign(amount=rng.normal(100, 15, 5_000), channel="web")
    grown.to_parquet(data / "day-2.parquet")  # the same amounts, a new column
    (data / "day-1.parquet").unlink()
    same = _json("snapshot", str(data), "--name", "feed")
    grown.assign(amount=grown["amount"] + 6).to_parquet(data / "day-2.parquet")
    moved = _json("snapshot", str(data), "--name", "feed")

    quiet = _json("diff", "feed@2", "feed@1")["columns"]
    drifted = invoke("diff", "feed@1", "feed@3")

    assert old["number"] == "feed@1" and same["number"] == "feed@2"
    assert quiet == {"added": [], "removed": ["channel"], "retyped": [], "drifted": []}
    assert drifted.exit_code == 0, drifted.output
    shift = re.search(r"columns: 'channel' added; 'amount' drifted "
                      r"\(wasserstein ([0-9.]+) > 0\.1\)", drifted.stdout)
    assert shift, drifted.stdout
    exact, slack = quantile_gap(frame["amount"], grown["amount"] + 6)
    assert abs(float(shift.group(1)) - exact) <= slack  # about 0.4: 6 over a spread of 15
    assert moved["number"] == "feed@3"


def quantile_gap(reference: pd.Series, current: pd.Series) -> tuple[float, float]:
    """The Wasserstein statistic of `diff` computed from the values themselves (the mean gap
    of the percentiles over the reference's spread), and how far the profiles' sketches may
    put it: each of their quantiles lies within the sketch's rank error of the exact one."""
    levels = np.arange(1, 100) / 100
    error = ds.kll_doubles_sketch.get_normalized_rank_error(KLL_K, False)
    scale = float(reference.std())
    gap = np.abs(np.quantile(reference, levels) - np.quantile(current, levels)).mean() / scale
    slack = sum((np.quantile(values, np.minimum(levels + error, 1))
                 - np.quantile(values, np.maximum(levels - error, 0))).mean() / 2
                for values in (reference, current)) / scale
    return float(gap), float(slack) + 0.001  # the printed figure is rounded to 3 places
