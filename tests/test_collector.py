"""`trainforge._collector.started`: the garbage collector off while a process imports, what
is alive then frozen out of its sight, and the collector back as it was."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from trainforge._collector import started


def _collected(thing: object) -> bool:
    """Whether the collector still looks at `thing` (a frozen object is in none of its
    generations)."""
    return any(candidate is thing for candidate in gc.get_objects())


def test_the_collector_is_off_inside_and_what_was_made_there_is_frozen() -> None:
    assert gc.isenabled()
    with started(trains=False):
        assert not gc.isenabled()
        made = [[index] for index in range(3)]  # tracked objects, alive at the end
    assert gc.isenabled() and not _collected(made)
    assert _collected([])  # what is made afterwards is collected as before


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with started(trains=False):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_failed_import_turns_the_collector_back_on_and_freezes_nothing() -> None:
    made: list[object] = []
    with pytest.raises(ModuleNotFoundError), started(trains=False):
        made.append([])
        import trainforge_no_such_module  # noqa: F401
    assert gc.isenabled() and _collected(made)


def test_a_training_process_has_torchs_compiler_imported_and_frozen() -> None:
    code = ("import gc, sys\nfrom trainforge._collector import started\n"
            "with started(trains=True):\n    import torch\n"
            "print('torch._dynamo' in sys.modules, gc.get_freeze_count())")
    imported, frozen = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                      text=True, check=True).stdout.split()
    assert imported == "True" and int(frozen) > 100_000  # torch's objects, its compiler's
