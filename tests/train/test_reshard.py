"""Sharded FSDP checkpoints (torch.distributed.checkpoint) written by N processes and resumed by
M under real torchrun (gloo on CPU): the loss series goes on as if the job never stopped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import reshard_script as script
import torch.distributed as dist

from trainforge.train.checkpoint import CheckpointManager, CheckpointWarning

SCRIPT = Path(__file__).with_name("reshard_script.py")
GLOBAL_BATCH, SAVED_AT = 32, 6
pytestmark = pytest.mark.slow


def torchrun(processes: int, *args: str) -> dict:
    out = Path(args[0]).with_suffix(".json")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SCRIPT.parent)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(processes), str(SCRIPT), args[0], str(out), *args[1:]]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, dict]]:
    """By world size (2 and 4): checkpoints whose newest is step 6 (saved asynchronously),
    written by that many processes with a global batch of 32 rows, and what they logged."""
    if not dist.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    found = {}
    for world in (2, 4):
        folder = tmp_path_factory.mktemp(f"written-by-{world}") / "checkpoints"
        found[world] = folder, torchrun(world, str(folder), str(GLOBAL_BATCH // world),
                                        str(SAVED_AT))
    return found


@pytest.fixture(scope="module")
def reference() -> dict:
    """One process, the same global batch, never stopped."""
    return script.train("single", GLOBAL_BATCH)


def test_each_rank_writes_its_own_shards_under_one_manifest(written, reference):
    for world, (folder, logged) in written.items():
        assert logged["train_loss"] == pytest.approx(reference["train_loss"][:SAVED_AT + 1],
                                                     abs=1e-5)
        manifest = json.loads((folder / f"step-{SAVED_AT:010d}" / "MANIFEST.json").read_text())
        assert (manifest["layout"], manifest["world_size"]) == ("sharded", world)
        shard_files = sorted(name for name in manifest["files"] if name.endswith(".distcp"))
        assert shard_files == [f"__{rank}_0.distcp" for rank in range(world)]
        assert {".metadata", "state.json", "tensors.safetensors"} < set(manifest["files"])
        for name, entry in manifest["files"].items():
            assert (folder / f"step-{SAVED_AT:010d}" / name).stat().st_size == entry["size"]


@pytest.mark.parametrize(("saved_by", "resumed_by"), [(2, 1), (2, 4), (4, 2)])
def test_a_sharded_checkpoint_resumes_at_another_world_size_and_the_loss_series_continues(
    written, reference, tmp_path, saved_by, resumed_by
):
    folder = tmp_path / "checkpoints"
    shutil.copytree(written[saved_by][0], folder)
    # The job's spec is unchanged: the same rows per micro-batch and process as when saved.
    resumed = torchrun(resumed_by, str(folder), str(GLOBAL_BATCH // saved_by))
    assert resumed["resumed_from"] == SAVED_AT
    batch_size, accumulate, world = resumed["geometry"]
    assert world == resumed_by and batch_size * accumulate * world == GLOBAL_BATCH
    assert batch_size <= GLOBAL_BATCH // saved_by  # never more rows per process than asked
    # The documented promise: the same global batches of the same rows, so the same steps.
    steps = len(reference["steps"])
    assert resumed["steps"] == list(range(SAVED_AT + 1, steps + 1))
    assert resumed["train_loss"] == pytest.approx(reference["train_loss"][SAVED_AT:], abs=1e-5)


def test_a_checkpoint_missing_one_ranks_shards_is_skipped_naming_the_file(written, tmp_path):
    folder = tmp_path / "checkpoints"
    shutil.copytree(written[4][0], folder)
    (folder / f"step-{SAVED_AT:010d}" / "__2_0.distcp").unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert CheckpointManager(folder).list() == []
    message = " ".join(str(w.message) for w in caught if w.category is CheckpointWarning)
    assert f"step-{SAVED_AT:010d}/__2_0.distcp: missing" in message
