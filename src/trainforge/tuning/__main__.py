"""`python -m trainforge.tuning STUDY`: one worker of a study (what `tune --workers N` starts),
with the settings of the environment; exit 1 with the message on a trainforge error."""

from __future__ import annotations

import sys

from trainforge._collector import started
from trainforge.errors import TrainforgeError


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m trainforge.tuning STUDY", file=sys.stderr)
        return 2
    with started(trains=True):
        from trainforge.pipeline import run_pipeline  # noqa: F401 - what its trials run
        from trainforge.tuning._study import quiet_optuna
        from trainforge.tuning._worker import run_worker
    quiet_optuna()
    try:
        run_worker(argv[0])
    except TrainforgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
