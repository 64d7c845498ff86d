"""Entry point of one torchrun worker: `python -m trainforge.pipeline._worker SPEC [a.b=value ...]`.

Started by `trainforge run SPEC --nproc-per-node N` (see `_distributed`), not by hand. Errors are
recorded for torchrun (`record`, with `WholeErrorFile`), so the launcher reports the worker's
own message.
"""

from __future__ import annotations

import os
import sys

from torch.distributed.elastic.multiprocessing.errors import ErrorHandler, record

from trainforge.pipeline._distributed import configure_worker_logging, run_worker


class WholeErrorFile(ErrorHandler):
    """torchrun's error handler, writing the worker's error file whole or not at all.

    When a worker dies, the agent terminates the others of its node. One terminated while it
    records its own error (its collective failed on the dead peer) would leave an empty file,
    which the agent fails to parse: it then gives up instead of restarting the workers
    (torchrun raises `JSONDecodeError`). Written beside the file and renamed onto it, the file
    is absent (the agent reports the exit code) or complete.
    """

    def __init__(self) -> None:
        super().__init__()
        self._writing: str | None = None

    def _get_error_file_path(self) -> str | None:
        return self._writing or super()._get_error_file_path()

    def record_exception(self, e: BaseException) -> None:
        target = super()._get_error_file_path()
        if target is None:
            super().record_exception(e)
            return
        self._writing = f"{target}.partial"
        try:
            super().record_exception(e)
        finally:
            self._writing = None
        os.replace(f"{target}.partial", target)


def _run(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    configure_worker_logging()
    run_worker(args[0], args[1:])


main = record(_run, error_handler=WholeErrorFile())


if __name__ == "__main__":
    main()
