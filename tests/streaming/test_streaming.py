"""The streaming loader and what it stands on: row groups, a split decided row by row, exact
order statistics, feature pipelines fitted in passes, batches that depend on neither the number
of DataLoader workers nor where a run resumed, and a SIGKILLed training resumed bit for bit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from stream_data import FEATURES, frame, streaming_source, write_source

from trainforge.config import FeaturesSpec, SplitSpec
from trainforge.errors import DataError
from trainforge.features import FeaturePipeline
from trainforge.ingest import list_source_files
from trainforge.split import split_frame
from trainforge.streaming import (
    TRAIN,
    RowGroupPlan,
    StreamingSource,
    TargetEncoder,
    fit_streaming,
    plan_split,
    select_ranks,
)

WORKER = Path(__file__).with_name("stream_train_worker.py")
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def source_dir(tmp_path_factory) -> Path:
    return write_source(tmp_path_factory.mktemp("stream") / "data")


def whole(folder: Path) -> pd.DataFrame:
    files = sorted(folder.glob("*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def with_ids(folder: Path, shuffle_rows: int = 300) -> StreamingSource:
    """A source whose only feature is the row's position in the whole data (passthrough)."""
    plan = RowGroupPlan.from_listing(list_source_files(str(folder)))
    split = plan_split(plan, SplitSpec(method="random", seed=5))
    pipeline = FeaturePipeline([], passthrough=["row_id"])
    return StreamingSource(split, pipeline, TargetEncoder("label", "binary"),
                           shuffle_rows=shuffle_rows)


@pytest.fixture(scope="module")
def id_source(tmp_path_factory) -> StreamingSource:
    folder = tmp_path_factory.mktemp("ids")
    for index in range(3):
        part = frame(700, seed=index)
        part.insert(0, "row_id", np.arange(index * 700, (index + 1) * 700, dtype=np.float64))
        part.to_parquet(folder / f"part-{index}.parquet", row_group_size=128, index=False)
    return with_ids(folder)


def rows_seen(batches) -> list[int]:
    return [int(v) for features, _ in batches for v in features[:, 0].tolist()]


def test_row_groups_come_from_the_footers(source_dir):
    plan = RowGroupPlan.from_listing(list_source_files(str(source_dir)))
    assert len(plan.groups) == 3 * 6  # 1,000 rows in groups of 170
    assert plan.total_rows == 3_000
    first = plan.groups[0]
    assert (first.file.name, first.index, first.first_row, first.rows) == (
        "part-0.parquet", 0, 0, 170)
    assert plan.groups[5].rows == 150 and plan.groups[5].first_row == 850
    table = plan.read(7, ["amount", "country"])
    expected = pd.read_parquet(source_dir / "part-1.parquet").iloc[170:340]
    assert table.column_names == ["amount", "country"]
    assert table.to_pandas()["country"].tolist() == expected["country"].tolist()


def test_a_file_streaming_cannot_read_is_named(tmp_path):
    folder = write_source(tmp_path / "data", files=1)
    frame(10).to_csv(folder / "extra.csv", index=False)
    with pytest.raises(DataError, match=r"extra\.csv: data\.streaming reads Parquet row groups"):
        RowGroupPlan.from_listing(list_source_files(str(folder)))
    (folder / "extra.csv").unlink()
    (folder / "broken.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match=r"broken\.parquet: not a readable Parquet file"):
        RowGroupPlan.from_listing(list_source_files(str(folder)))


def test_a_file_changed_after_planning_is_named(tmp_path):
    folder = write_source(tmp_path / "data", files=2)
    plan = RowGroupPlan.from_listing(list_source_files(str(folder)))
    (folder / "part-1.parquet").unlink()
    with pytest.raises(DataError, match=r"part-1\.parquet: removed after the source was listed"):
        plan.read(len(plan.groups) - 1, ["amount"])


@pytest.mark.parametrize("ties", [False, True])
def test_select_ranks_is_exact(ties):
    rng = np.random.default_rng(3)
    values = rng.integers(0, 50, 20_000) if ties else rng.normal(size=20_000)
    chunks = lambda: ((values[i:i + 999], np.arange(i, min(i + 999, 20_000)))  # noqa: E731
                      for i in range(0, 20_000, 999))
    n, picked = select_ranks(chunks, lambda n: [0, 7, n // 2, n - 1])
    order = np.lexsort((np.arange(20_000), values))
    assert n == 20_000
    assert [(p.value, p.row) for p in picked] == [
        (values[order[k]].item(), int(order[k])) for k in (0, 7, 10_000, 19_999)]


def test_a_time_split_holds_the_rows_the_in_memory_split_holds(source_dir):
    spec = SplitSpec(method="time", time_column="ts", val_fraction=0.2, test_fraction=0.1)
    plan = RowGroupPlan.from_listing(list_source_files(str(source_dir)))
    split = plan_split(plan, spec)
    parts = np.concatenate([split.parts(g) for g in range(len(plan.groups))])
    expected = split_frame(whole(source_dir), spec)
    for part, positions in enumerate(expected.positions):
        assert sorted(np.flatnonzero(parts == part).tolist()) == sorted(positions.tolist())
    assert split.counts.sum(axis=0).tolist() == [2_100, 600, 300]


def test_a_random_split_has_the_sizes_and_is_the_same_for_any_group_alone(source_dir):
    spec = SplitSpec(method="random", seed=9)
    plan = RowGroupPlan.from_listing(list_source_files(str(source_dir)))
    split = plan_split(plan, spec)
    assert split.counts.sum(axis=0).tolist() == [2_100, 450, 450]
    again = plan_split(plan, spec)
    assert np.array_equal(split.parts(4), again.parts(4))
    other = plan_split(plan, SplitSpec(method="random", seed=10))
    assert not np.array_equal(split.parts(4), other.parts(4))


def test_bad_time_columns_are_named(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    broken = frame(50)
    broken.loc[[3, 9], "ts"] = pd.NaT
    broken.to_parquet(folder / "a.parquet", index=False)
    plan = RowGroupPlan.from_listing(list_source_files(str(folder)))
    with pytest.raises(DataError, match=r"2 missing value\(s\) \(first: a\.parquet row 4, "
                                        r"a\.parquet row 10\)"):
        plan_split(plan, SplitSpec(method="time", time_column="ts"))
    with pytest.raises(DataError, match="a.parquet: split: time column 'country' holds "
                                        "large_string"):
        plan_split(plan, SplitSpec(method="time", time_column="country"))
    with pytest.raises(DataError, match="time column 'when' not found"):
        plan_split(plan, SplitSpec(method="time", time_column="when"))


def test_the_streaming_fit_learns_what_the_in_memory_fit_learns(source_dir):
    source = streaming_source(source_dir)
    spec = SplitSpec(method="time", time_column="ts")
    train = split_frame(whole(source_dir), spec).train
    expected = FeaturePipeline.from_spec(FEATURES).fit(train)
    got = [t.to_dict()["state"] for t in source.pipeline.transforms]
    want = [t.to_dict()["state"] for t in expected.transforms]
    assert got[0] == want[0]  # the exact median
    assert got[2] == want[2]  # one-hot categories
    for key in ("mean", "std"):
        for column, value in want[1][key].items():
            assert got[1][key][column] == pytest.approx(value, rel=1e-12)


def test_a_column_without_values_fails_the_streaming_fit(source_dir):
    pipeline = FeaturePipeline.from_spec(FeaturesSpec(
        transforms=[{"type": "standardize", "columns": ["amount"]}]))
    empty = lambda columns: iter([pd.DataFrame({"amount": [np.nan, np.nan]})])  # noqa: E731
    with pytest.raises(DataError, match="'amount' has no finite values to fit on"):
        fit_streaming(pipeline, empty)
    text = lambda columns: iter([pd.DataFrame({"amount": ["a", "b"]})])  # noqa: E731
    with pytest.raises(DataError, match="'amount' holds (object|str) values; expected numbers"):
        fit_streaming(pipeline, text)


def test_each_training_row_comes_once_an_epoch_in_a_new_order(id_source):
    train_rows = sorted(int(r) for g in range(len(id_source.plan.groups))
                        for r in (id_source.split.starts[g]
                                  + np.flatnonzero(id_source.split.parts(g) == TRAIN)))
    batches = id_source.make_batches(50, CPU, shuffle=True, seed=1)
    first, second = rows_seen(batches.epoch(0)), rows_seen(batches.epoch(1))
    assert sorted(first) == sorted(second) == train_rows
    assert first != second
    assert len(list(batches.epoch(0))) == len(batches) == -(-len(train_rows) // 50)
    unshuffled = id_source.make_batches(50, CPU, shuffle=False)
    assert rows_seen(unshuffled.epoch(0)) == train_rows


def test_ranks_share_an_epoch_without_overlap(id_source):
    ranks = [id_source.make_batches(32, CPU, shuffle=True, seed=4, rank=r, world_size=2)
             for r in range(2)]
    seen = [rows_seen(b.epoch(2)) for b in ranks]
    assert len(ranks[0]) == len(ranks[1])
    assert not set(seen[0]) & set(seen[1])
    assert len(seen[0]) + len(seen[1]) == id_source.rows - id_source.rows % 2
    one = rows_seen(id_source.make_batches(64, CPU, shuffle=True, seed=4).epoch(2))
    for k in range(len(ranks[0])):  # rank batches together are one process's batch
        together = seen[0][k * 32:(k + 1) * 32] + seen[1][k * 32:(k + 1) * 32]
        assert sorted(together) == sorted(one[k * 64:(k + 1) * 64])


@pytest.mark.slow
def test_batches_do_not_depend_on_workers_or_on_where_iteration_resumed(id_source):
    alone = id_source.make_batches(40, CPU, shuffle=True, seed=2, num_workers=0)
    pooled = id_source.make_batches(40, CPU, shuffle=True, seed=2, num_workers=2)
    batches = list(alone.epoch(1))
    for got, want in zip(pooled.epoch(1), batches, strict=True):
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    resumed = list(pooled.epoch(1, start=23))
    assert all(torch.equal(a[0], b[0]) for a, b in zip(resumed, batches[23:], strict=True))

    stepped = id_source.make_batches(40, CPU, shuffle=True, seed=2)
    iterator = iter(stepped)
    next(iterator), next(iterator)
    state = stepped.state_dict()
    assert state == {"epoch": 0, "batch": 2}
    fresh = id_source.make_batches(40, CPU, shuffle=True, seed=2, num_workers=2)
    fresh.load_state_dict(state)
    rest = list(fresh)
    assert len(rest) == len(alone) - 2
    assert torch.equal(rest[0][0], list(alone.epoch(0))[2][0])
    assert fresh.state_dict() == {"epoch": 1, "batch": 0}


def test_batches_are_row_major_wherever_iteration_began(source_dir):
    """CPU kernels round differently by memory layout: a resumed run must get the layout an
    uninterrupted one got."""
    batches = streaming_source(source_dir).make_batches(64, CPU, shuffle=True, seed=11)
    for start in (0, 5, 7):
        for features, _ in batches.epoch(1, start=start):
            assert features.shape[1] == 6 and features.stride() == (6, 1)


def test_a_bad_value_is_named_by_file_and_row(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    rows = frame(40)
    rows.loc[17, "label"] = 7
    rows.to_parquet(folder / "a.parquet", index=False, row_group_size=10)
    source = streaming_source(folder, SplitSpec(method="random", val_fraction=0.05,
                                                test_fraction=0.05), shuffle_rows=10)
    with pytest.raises(DataError, match=r"data.target 'label': 7 at a\.parquet row 18; "
                                        "expected 0 or 1"):
        list(source.make_batches(8, CPU, shuffle=False).epoch(0))


@pytest.mark.slow
def test_a_killed_training_resumes_bit_for_bit_with_other_workers(tmp_path, source_dir):
    """Killed three times (mid-epoch 0, 1 and 2; each attempt with other DataLoader workers
    than the one before), resumed each time from whatever checkpoint had committed."""
    def attempt(checkpoints: str, workers: int, out: str, *kill: str) -> int:
        return subprocess.run([sys.executable, str(WORKER), str(source_dir),
                               str(tmp_path / checkpoints), str(workers),
                               str(tmp_path / out), *kill], timeout=300).returncode

    assert attempt("whole", 0, "whole.safetensors") == 0
    for workers, kill_at in ((2, "19"), (0, "46"), (2, "75")):  # 33 steps an epoch
        assert attempt("killed", workers, "resumed.safetensors", kill_at) == -9
    assert not (tmp_path / "resumed.safetensors").exists()
    assert attempt("killed", 1, "resumed.safetensors") == 0
    whole_bytes = (tmp_path / "whole.safetensors").read_bytes()
    assert (tmp_path / "resumed.safetensors").read_bytes() == whole_bytes
