"""DDP and FSDP under real torchrun (2 processes, gloo on CPU) against one process with the same
global batch; and the strategies' set-up rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import distributed_script as script
import pytest
import torch
import torch.distributed as dist

from trainforge.errors import TrainingError
from trainforge.train import make_strategy, process_group

SCRIPT = Path(__file__).with_name("distributed_script.py")
WORLD = 2


@pytest.fixture(scope="module")
def torchrun_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every case of distributed_script.py trained once under torchrun with 2 processes."""
    if not dist.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    out = tmp_path_factory.mktemp("torchrun") / "results.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SCRIPT.parent)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(WORLD), str(SCRIPT), str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("case", list(script.CASES))
def test_two_process_loss_curve_equals_one_process_with_the_same_global_batch(
    torchrun_results, case
):
    strategy, accumulate, clip = script.CASES[case]
    if strategy == "fsdp" and not script.FSDP2:
        pytest.skip(f"FSDP2 (fully_shard) needs torch >= 2.6, this is {torch.__version__}")
    reference = script.train_case("single", accumulate, clip, script.BATCH_PER_RANK * WORLD)
    launched = torchrun_results[case]
    assert len(launched["train_loss"]) == len(reference["train_loss"]) == 3 * 8 // accumulate
    assert launched["train_loss"] == pytest.approx(reference["train_loss"], abs=1e-5)
    assert launched["grad_norm"] == pytest.approx(reference["grad_norm"], abs=1e-5)
    assert launched["val_loss"] == pytest.approx(reference["val_loss"], abs=1e-5)
    for name, values in reference["weights"].items():
        assert launched["weights"][name] == pytest.approx(values, abs=1e-5), name


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_each_rank_validates_its_share_and_the_metrics_equal_one_process(
    torchrun_results, strategy
):
    if strategy == "fsdp" and not script.FSDP2:
        pytest.skip(f"FSDP2 (fully_shard) needs torch >= 2.6, this is {torch.__version__}")
    reference = script.validation_case("single")
    launched = torchrun_results["validation"][strategy]
    share = -(-script.VAL_ROWS // WORLD)
    assert reference["scored_rows"] == 2 * script.VAL_ROWS  # two epochs, one validation each
    assert launched["scored_rows"] == [2 * share] * WORLD
    assert {"val_loss", "val_roc_auc", "val_accuracy"} <= set(reference["val"])
    assert set(launched["val"]) == set(reference["val"])
    for name, values in reference["val"].items():
        assert len(values) == 2, name
        assert launched["val"][name] == pytest.approx(values, abs=1e-6, nan_ok=True), name


@pytest.mark.slow
def test_strategy_collectives_span_the_ranks(torchrun_results):
    assert torchrun_results["collectives"] == {"mean_of_ranks": 0.5, "world_size": WORLD}


def test_ddp_without_torchrun_runs_as_a_group_of_one_the_entry_point_joins(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with process_group("cpu") as device:
        strategy = make_strategy("ddp", "cpu")
        assert (strategy.rank, strategy.world_size, strategy.device) == (0, 1, device)
        assert dist.get_backend() == "gloo"
    assert not dist.is_initialized()  # left when the entry point's block ends


@pytest.mark.parametrize("name", ["ddp", "fsdp"])
def test_a_distributed_strategy_without_a_process_group_says_how_to_get_one(name):
    assert not dist.is_initialized()
    with pytest.raises(TrainingError, match=rf"'{name}' needs a process group: run it through"):
        make_strategy(name, "cpu")


def test_unknown_strategy_is_an_error():
    with pytest.raises(TrainingError, match="training.strategy: expected one of single, ddp"):
        make_strategy("horovod", "cpu")
