"""A worker of `TorchrunExecutor`: `python -m torch.distributed.run ... -m
trainforge.orchestration._torchrun_step FOLDER`, where FOLDER holds the pickled call.

Every rank joins the process group (NCCL on its local GPU when CUDA is there, else gloo),
imports the step's function and calls it on the inputs read from the value store. Rank 0
records to the tracked run, stores the outputs and writes their references to
`FOLDER/result.json`; a rank that fails writes `FOLDER/error-<rank>.json` (kind, message,
when: the first failure is the cause, the others' broken collectives follow from it).
Files are written beside their name and renamed into place, so the executor reads whole ones.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from trainforge.orchestration._execution import (
    IsolatedCall,
    attach,
    call_elsewhere,
    describe,
    error_kind,
    store_outputs,
    where,
)


def main(folder: Path) -> int:
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    recorder = None
    try:
        call: IsolatedCall = pickle.loads((folder / "call.pkl").read_bytes())
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        if rank == 0 and call.run_id is not None and call.settings is not None:
            recorder = attach(call.settings, call.run_id)
        produced = call_elsewhere(call, recorder)
        if rank == 0:
            _write(folder / "result.json", store_outputs(call, produced))
        dist.barrier()
        return 0
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the executor
        _write(folder / f"error-{rank}.json", {"rank": rank, "at": time.time(),
                                                "kind": error_kind(exc),
                                                "message": describe(exc) + where(exc)})
        return 1
    finally:
        if recorder is not None:
            recorder.close()
        if dist.is_initialized():
            dist.destroy_process_group()


def _write(path: Path, document: Any) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document))
    partial.replace(path)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
