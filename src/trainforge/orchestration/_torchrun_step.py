"""A worker of `TorchrunExecutor`: `python -m torch.distributed.run ... -m
trainforge.orchestration._torchrun_step FOLDER`.

FOLDER holds this node's call: `call.pkl` on the node whose runner executes the step (its
inputs' references, where it records), `join.pkl` on a node that joins it (the step as this
node defined it, its value store and settings, no inputs). Every rank joins the process group
(gloo for CPU tensors, and NCCL for CUDA ones on the local GPU when CUDA is there); the ranks
of the executing node send the call's inputs, pipeline run, attempt and run to all, so each
rank calls the step's function on the same inputs, read from its own node's value store.

Global rank 0 records to the tracked run (the others' recorder drops every write), stores the
outputs and sends their references to every rank; local rank 0 of each node writes them to
`FOLDER/result.json`. A rank that fails writes `FOLDER/error-<restart>-<rank>.json` (kind,
message, when; a preemption's signal and step): the first failure of the last restart is the
cause, the others' broken collectives follow from it. Files are written beside their name and
renamed into place, so the executor reads whole ones.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainforge._collector import started
from trainforge.errors import Preempted, TrainforgeError
from trainforge.orchestration._execution import (
    IsolatedCall,
    attach,
    call_elsewhere,
    describe,
    error_kind,
    store_outputs,
    where,
)

SENT = ("inputs", "pipeline_run_id", "attempt", "run_id")  # what the executing node sends
CALL_FILE = "call.pkl"  # the executing node's call
JOIN_FILE = "join.pkl"  # a joining node's own definition of the step


def main(folder: Path) -> int:
    rank = int(os.environ.get("RANK", "0"))
    with started(trains=True):  # torch, and the modules the call's step imports as it loads
        import torch
        import torch.distributed as dist

        try:
            local = _local_call(folder)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the executor
            return _failed(folder, exc, rank)
    recorder = None
    try:
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
        call = _the_call(local, executing=(folder / CALL_FILE).exists())
        recorder = _recorder(call, rank)
        produced = call_elsewhere(call, recorder)
        refs = [store_outputs(call, produced) if rank == 0 else None]
        dist.broadcast_object_list(refs, src=0)
        if int(os.environ.get("LOCAL_RANK", "0")) == 0:
            _write(folder / "result.json", refs[0])
        dist.barrier()
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the executor
        return _failed(folder, exc, rank)
    finally:
        if recorder is not None:
            recorder.close()
        if dist.is_initialized():
            dist.destroy_process_group()


def _local_call(folder: Path) -> IsolatedCall:
    for name in (CALL_FILE, JOIN_FILE):
        if (folder / name).exists():
            call: IsolatedCall = pickle.loads((folder / name).read_bytes())
            return call
    raise TrainforgeError(f"{folder}: holds neither {CALL_FILE} nor {JOIN_FILE}")


def _the_call(local: IsolatedCall, executing: bool) -> IsolatedCall:
    """This rank's call: its node's own, with what the executing node's lowest rank sends."""
    import torch.distributed as dist

    executing_ranks: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(executing_ranks, executing)
    if True not in executing_ranks:
        raise TrainforgeError("no node of the torchrun job executes the step: every node "
                              "joined it")
    sent: list[Any] = [{name: getattr(local, name) for name in SENT} if executing else None]
    dist.broadcast_object_list(sent, src=executing_ranks.index(True))
    return replace(local, **sent[0])


def _recorder(call: IsolatedCall, rank: int) -> Any:
    """Rank 0's handle on the run; the others' recorder drops every write."""
    if call.run_id is None or call.settings is None:
        return None
    if rank == 0:
        return attach(call.settings, call.run_id)
    from trainforge.storage.artifacts import open_artifact_store
    from trainforge.tracking import SilentRun

    return SilentRun(call.run_id, open_artifact_store(call.settings.artifact_root))


def _failed(folder: Path, exc: BaseException, rank: int) -> int:
    """Exit code 1, once the failure is written where the executor reads it."""
    _write(folder / f"error-{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}-{rank}.json",
           _error(exc, rank))
    return 1


def _error(exc: BaseException, rank: int) -> dict[str, Any]:
    error = {"rank": rank, "at": time.time(), "kind": error_kind(exc),
             "restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
             "message": describe(exc) + where(exc)}
    if isinstance(exc, Preempted):
        error.update(kind="preempted", signal=exc.signal, step=exc.step)
    return error


def _write(path: Path, document: Any) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document))
    partial.replace(path)


def _log_to_stderr() -> None:
    """Plain `trainforge` log lines on stderr, which the executor passes on."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("trainforge")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)


def _exit(code: int) -> None:
    """End the worker without the interpreter's teardown. Everything it owes is on disk by
    now (result or error files renamed into place, the run's handle closed); what teardown
    would still do is destroy torch's process-group objects in an arbitrary order, and a gloo
    thread destroyed while joinable there aborts the rank ("terminate called without an
    active exception") after a step that succeeded."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _log_to_stderr()
    _exit(main(Path(sys.argv[1])))
