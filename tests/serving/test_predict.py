"""`trainforge predict` scores a Parquet file in streamed batches as the in-process model
does, and a row that breaks the contract stops it naming the row and field, leaving no
output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from trainforge.serving import load_served_version, predict_file, resolve_version
from trainforge.train import load_stored_model

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


def cli(trained, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True,
                          env={**os.environ, **trained.env}, timeout=300)


@pytest.fixture(scope="module")
def scored(trained, tmp_path_factory):
    golden = trained.golden()
    source = tmp_path_factory.mktemp("predict") / "records.parquet"
    golden.drop(columns=["is_fraud"]).to_parquet(source, index=False)
    expected = load_stored_model(trained.artifacts, trained.run_id).predict_scores(golden)
    return source, expected


@pytest.mark.slow
def test_the_cli_output_equals_the_in_process_scores(trained, scored, tmp_path):
    source, expected = scored
    target = tmp_path / "predictions.parquet"
    result = cli(trained, "predict", "fraud_detector", "--input", str(source),
                 "--output", str(target))
    assert result.returncode == 0, result.stderr
    assert f"{len(expected)} rows scored by fraud_detector" in result.stdout
    table = pq.read_table(target).to_pydict()
    np.testing.assert_allclose(table["probability"], expected, rtol=0, atol=1e-5)
    assert table["prediction"] == [int(p >= 0.5) for p in table["probability"]]
    assert len(table["flags"]) == len(expected)


def test_predict_imports_no_metrics_and_no_plotting(trained, scored, tmp_path):
    """What keeps `predict` quick to start (benchmarks/cli_startup.py times it): scoring needs
    the model and the feature encoder, not torchmetrics, scipy or matplotlib (1 to 2 s of
    imports on their own)."""
    source, expected = scored
    probe = ("import sys\nfrom trainforge.cli import main\n"
             "sys.argv = ['trainforge', *sys.argv[1:]]\n"
             "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
             "print(sorted(m for m in ('torchmetrics', 'scipy', 'matplotlib', 'sklearn') "
             "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe, "predict", "fraud_detector",
                             "--input", str(source), "--output", str(tmp_path / "out.parquet")],
                            capture_output=True, text=True, env={**os.environ, **trained.env},
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]", result.stdout
    assert pq.read_metadata(tmp_path / "out.parquet").num_rows == len(expected)


def test_streamed_batches_with_torch_equal_the_in_process_batch_scores_exactly(trained, scored,
                                                                        tmp_path):
    source, _ = scored
    golden = trained.golden()
    stored = load_stored_model(trained.artifacts, trained.run_id)
    expected = np.concatenate([stored.predict_scores(golden.iloc[start:start + 500])
                               for start in range(0, len(golden), 500)])
    version = resolve_version(trained.store, f"fraud_detector@{trained.version.version}")
    served = load_served_version(trained.artifacts, version,
                                 trained.store.get_run(version.run_id), runtime="torch")
    rows = predict_file(served, source, tmp_path / "out.parquet", batch_rows=500)
    assert rows == len(expected)
    probabilities = pq.read_table(tmp_path / "out.parquet").column("probability").to_numpy()
    np.testing.assert_array_equal(probabilities, expected)


@pytest.mark.slow
def test_a_row_breaking_the_contract_is_named_and_nothing_is_written(trained, scored, tmp_path):
    source, _ = scored
    frame = pq.read_table(source).to_pandas()
    frame.loc[2500, "country"] = None
    broken = tmp_path / "broken.parquet"
    frame.to_parquet(broken, index=False)
    target = tmp_path / "predictions.parquet"
    result = cli(trained, "predict", "fraud_detector@production", "--input", str(broken),
                 "--output", str(target))
    assert result.returncode == 1
    assert "row 2501: field 'country': is null" in result.stderr
    assert list(tmp_path.iterdir()) == [broken]


@pytest.mark.slow
def test_an_unknown_stage_or_version_exits_1(trained, scored, tmp_path):
    source, _ = scored
    out = str(tmp_path / "p.parquet")
    result = cli(trained, "predict", "fraud_detector@nowhere", "--input", str(source),
                 "--output", out)
    assert result.returncode == 1 and "neither a version number nor a stage" in result.stderr
    result = cli(trained, "predict", "fraud_detector@999", "--input", str(source),
                 "--output", out)
    assert result.returncode == 1 and "999" in result.stderr
