"""The cyclic garbage collector in the processes trainforge starts to train (`run`, `tune`,
`tune-worker`, a study's workers, torchrun's workers).

Such a process first imports torch and the libraries around it: millions of objects that live
as long as the process does. With the collector on, the imports set it off again and again for
nothing, and afterwards each full collection walks every one of those objects again, while
training allocates enough to start one every few seconds. `started()` holds the collector off
while the block imports, then moves every object alive into the permanent generation
(`gc.freeze`), where no collection looks again; cycles made later are collected as before. A
one-epoch run of the fraud example takes about a quarter less time (`benchmarks/startup.py`).
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def started(trains: bool) -> Iterator[None]:
    """The collector off while the block imports what the process needs, what is alive then
    frozen, and the collector back as it was. `trains`: the process steps an optimizer, whose
    first step imports torch's compiler (`torch._disable_dynamo`, over a second of imports):
    it is imported here, so that its objects are frozen with the rest."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if trains:
            importlib.import_module("torch._dynamo")
        gc.freeze()
    finally:
        if was_enabled:
            gc.enable()
