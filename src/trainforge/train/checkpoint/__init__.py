"""Checkpoints that survive crashes and resume bit for bit.

A trainer hands `CheckpointManager` its whole state as one mapping:

    {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
     "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(),
     "rng": capture_rng_state(), "data": {"epoch": 3, "batch": 120, "seed": 7},
     "trainer": {"global_step": 4200, "best_metric": 0.31, "early_stopping": {...}}}

Tensors go to one safetensors file, everything else to a JSON document (tuples, int keys, bytes
and NumPy values keep their types), and a manifest with each file's size and checksum is
written last as the commit marker. Loading verifies checksums first and never unpickles. See
`CheckpointManager` for saving on a policy, asynchronous saves, retention and loading.

Under FSDP a checkpoint can be sharded instead (`save_sharded` / `load_sharded`): each rank
writes its own shards through `torch.distributed.checkpoint`, under the same manifest,
checksums and retention, and a later job reads them at any world size (`_sharded.py`).

Names are imported on first use (`trainforge._lazy`): listing, verifying and deleting
checkpoints (`CheckpointManager.list`, `gc`, `select_deletions`) come without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.train.checkpoint._format import CheckpointInfo
    from trainforge.train.checkpoint._manager import CheckpointManager
    from trainforge.train.checkpoint._policy import is_due, select_deletions
    from trainforge.train.checkpoint._rng import capture_rng_state, restore_rng_state
    from trainforge.train.checkpoint._warnings import CheckpointWarning

_EXPORTS = {
    "CheckpointInfo": "trainforge.train.checkpoint._format",
    "CheckpointManager": "trainforge.train.checkpoint._manager",
    "CheckpointWarning": "trainforge.train.checkpoint._warnings",
    "capture_rng_state": "trainforge.train.checkpoint._rng",
    "is_due": "trainforge.train.checkpoint._policy",
    "restore_rng_state": "trainforge.train.checkpoint._rng",
    "select_deletions": "trainforge.train.checkpoint._policy",
}

__all__ = [
    "CheckpointInfo",
    "CheckpointManager",
    "CheckpointWarning",
    "capture_rng_state",
    "is_due",
    "restore_rng_state",
    "select_deletions",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
