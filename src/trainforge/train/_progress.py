"""Progress of training: a rich bar per epoch on a terminal, a few plain lines otherwise.

Only rank 0 shows progress. Updates come at the trainer's log steps (every
`log_every_n_steps` optimizer steps), so the loop pays nothing per step for them. Output goes
to stderr (the bar) or the `trainforge.train` logger (the lines), never to stdout, which
`--json` output owns.

Plain lines have their own cadence, apart from what is logged to the run: piped into a file
or a CI log, a line per log step would be thousands of lines. They are the latest logged step
metrics at most every `PLAIN_EVERY_S` seconds, and one summary line at each epoch's end.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping
from typing import Protocol

log = logging.getLogger("trainforge.train")
PLAIN_EVERY_S = 30.0


class Progress(Protocol):
    def start_epoch(self, epoch: int, epochs: int, batches: int, done: int) -> None:
        """Epoch `epoch` (0-based) of `epochs` begins; `done` of its `batches` are behind us."""

    def update(self, done: int, step: int, metrics: Mapping[str, float]) -> None:
        """`done` batches of this epoch are trained; `metrics` were just logged at `step`."""

    def end_epoch(self, metrics: Mapping[str, float]) -> None:
        """The epoch is over; `metrics` are its summary."""

    def close(self) -> None:
        """Training is over (or failed): release the terminal."""


class Silent:
    """No progress output (progress: off, or a rank other than 0)."""

    def start_epoch(self, epoch: int, epochs: int, batches: int, done: int) -> None:
        pass

    def update(self, done: int, step: int, metrics: Mapping[str, float]) -> None:
        pass

    def end_epoch(self, metrics: Mapping[str, float]) -> None:
        pass

    def close(self) -> None:
        pass


class LogLines(Silent):
    """Plain log lines: the step metrics of a log step once `every_s` seconds have passed since
    the epoch began or the latest line, and at each epoch's end its summary and duration.
    `clock` gives seconds (monotonic)."""

    def __init__(
        self, every_s: float = PLAIN_EVERY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._every_s = every_s
        self._clock = clock

    def start_epoch(self, epoch: int, epochs: int, batches: int, done: int) -> None:
        self._label = f"epoch {epoch + 1}/{epochs}"
        self._batches = batches
        self._started = self._last_line = self._clock()

    def update(self, done: int, step: int, metrics: Mapping[str, float]) -> None:
        now = self._clock()
        if now - self._last_line < self._every_s:
            return
        self._last_line = now
        log.info("%s batch %d/%d step %d %s", self._label, done, self._batches, step,
                 format_metrics(metrics))

    def end_epoch(self, metrics: Mapping[str, float]) -> None:
        log.info("%s done in %.1fs %s", self._label, self._clock() - self._started,
                 format_metrics(metrics))


class RichBar(Silent):
    """A rich progress bar per epoch with the latest loss and throughput, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._console = Console(stderr=True)
        self._bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
            console=self._console,
        )

    def start_epoch(self, epoch: int, epochs: int, batches: int, done: int) -> None:
        self._bar.start()  # a no-op once started
        self._label = f"epoch {epoch + 1}/{epochs}"
        self._task = self._bar.add_task(self._label, total=batches, completed=done, stats="")

    def update(self, done: int, step: int, metrics: Mapping[str, float]) -> None:
        stats = f"loss {metrics.get('train_loss', float('nan')):.4g}"
        if "samples_per_s" in metrics:
            stats += f"  {metrics['samples_per_s']:,.0f} samples/s"
        self._bar.update(self._task, completed=done, stats=stats)

    def end_epoch(self, metrics: Mapping[str, float]) -> None:
        self._bar.update(self._task, completed=self._bar.tasks[-1].total)
        self._console.print(f"{self._label} {format_metrics(metrics)}", highlight=False)

    def close(self) -> None:
        self._bar.stop()


def make_progress(mode: str, is_rank_zero: bool) -> Progress:
    """`training.progress`: auto (a bar on a terminal, plain lines otherwise), bar, plain or
    off."""
    if mode == "off" or not is_rank_zero:
        return Silent()
    if mode == "bar" or (mode == "auto" and sys.stderr.isatty()):
        return RichBar()
    return LogLines()


def format_metrics(metrics: Mapping[str, float]) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if k != "epoch")
