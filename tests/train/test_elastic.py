"""Losing a node mid-epoch: two torchrun "nodes" of two CPU processes (`--nnodes 1:2`), one
killed; the survivors re-form the group and resume at world size 2 from the newest sharded
checkpoint, keeping the global batch and the rows of the epoch not trained yet."""

from __future__ import annotations

import json
import sys
import time
import uuid

import elastic_script as script
import pytest
import torch.distributed as dist

pytestmark = pytest.mark.slow
STEPS_PER_EPOCH = script.ROWS // (script.BATCH_PER_RANK * 4)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds workers through /proc")
def test_a_job_that_loses_a_node_mid_epoch_finishes_with_every_row_trained_once(tmp_path):
    if not dist.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    records, checkpoints = tmp_path / "records", tmp_path / "checkpoints"
    records.mkdir()
    port, job = script.free_port(), uuid.uuid4().hex
    # Mid-way through the second epoch, after a checkpoint: every worker holds there.
    hold_at = STEPS_PER_EPOCH + 2
    first = script.launch_node(checkpoints, records, hold_at, port, job, tmp_path / "node0.log")
    time.sleep(1)  # the first agent hosts the rendezvous
    second = script.launch_node(checkpoints, records, hold_at, port, job, tmp_path / "node1.log")
    try:
        script.wait_for_steps(records, 4 * hold_at, [first, second])
        killed_at = script.kill_node(second)
        script.release(records)
        assert first.wait(timeout=240) == 0, (tmp_path / "node0.log").read_text()[-4000:]
    finally:
        for agent in (first, second):
            if agent.poll() is None:
                script.kill_node(agent)

    attempts = script.read_records(records)
    assert sorted(attempts) == [0, 1]
    resumed = json.loads((records / "resumed-1.json").read_text())["step"]
    assert resumed is not None and STEPS_PER_EPOCH <= resumed
    assert {r["world"] for r in attempts[0]} == {4} and {r["world"] for r in attempts[1]} == {2}
    # The same 64-row global batch: 16 rows per micro-batch, now two micro-batches a step.
    assert {tuple(r["geometry"]) for r in attempts[1]} == {(16, 2, 2)}
    # The trajectory the model took: the first attempt up to the checkpoint it resumed from,
    # then the second; every row of every epoch trained on exactly once.
    trained: dict[int, list[int]] = {}
    for record in [r for r in attempts[0] if r["step"] <= resumed] + attempts[1]:
        trained.setdefault((record["step"] - 1) // STEPS_PER_EPOCH, []).extend(record["rows"])
    assert sorted(trained) == list(range(script.EPOCHS))
    for epoch, rows in trained.items():
        assert sorted(rows) == list(range(script.ROWS)), f"epoch {epoch}"
    assert min(r["step"] for r in attempts[1]) == resumed + 1
    assert max(r["step"] for r in attempts[1]) == script.EPOCHS * STEPS_PER_EPOCH
    recovery = min(r["t"] for r in attempts[1]) - killed_at
    print(f"from the kill to the first step after resuming: {recovery:.1f} s "
          "(benchmarks/recovery.py measures it against the seed's 5 minutes)")
