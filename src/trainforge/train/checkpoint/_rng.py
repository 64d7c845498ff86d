"""The process-wide random number generators, captured and restored bit for bit.

Covered: Python's `random`, NumPy's legacy global generator (`np.random.*`), torch's CPU
generator and the generator of every CUDA device. NumPy `Generator` objects and torch
`Generator` objects created by the caller (e.g. a sampler's) are the caller's to save, as part of
its own state. Both functions act on global state: call them from the training thread.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

from trainforge.train.checkpoint._warnings import CheckpointWarning


def capture_rng_state() -> dict[str, Any]:
    """The state of every global generator, as a mapping a checkpoint can hold.

    >>> import torch
    >>> state = capture_rng_state()
    >>> first = torch.rand(3)
    >>> restore_rng_state(state)
    >>> torch.equal(torch.rand(3), first)
    True
    """
    # torch and NumPy only where generators are read or set: listing checkpoints imports none
    import numpy as np
    import torch

    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Put every generator back to `state` (from `capture_rng_state`, possibly via a checkpoint).

    CUDA states are restored for the devices present; a `CheckpointWarning` says when the saved
    device count differs from this machine's (the missing or extra devices are not restored).
    """
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    saved = list(state.get("cuda", []))
    present = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if len(saved) != present:
        warnings.warn(
            f"checkpoint holds RNG states of {len(saved)} CUDA device(s), this process sees "
            f"{present}: restoring the first {min(len(saved), present)}",
            CheckpointWarning,
            stacklevel=2,
        )
    for index in range(min(len(saved), present)):
        torch.cuda.set_rng_state(saved[index], device=index)
