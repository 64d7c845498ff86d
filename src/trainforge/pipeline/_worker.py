"""Entry point of one torchrun worker: `python -m trainforge.pipeline._worker SPEC [a.b=value ...]`.

Started by `trainforge run SPEC --nproc-per-node N` (see `_distributed`), not by hand. Errors are
recorded for torchrun (`@record`), so the launcher reports the worker's own message.
"""

from __future__ import annotations

import sys

from torch.distributed.elastic.multiprocessing.errors import record

from trainforge.pipeline._distributed import configure_worker_logging, run_worker


@record
def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    configure_worker_logging()
    run_worker(args[0], args[1:])


if __name__ == "__main__":
    main()
