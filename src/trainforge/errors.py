"""The one exception hierarchy of trainforge.

    TrainforgeError                 base of everything trainforge raises on purpose
    ├── SpecError                   a pipeline spec or contract file is malformed or invalid
    ├── DataError                   input data cannot be used
    │   ├── DataNotFound            no file matches the configured source
    │   ├── DataValidationError     rows break the schema contract (carries the report)
    │   ├── DataDriftError          the data drifted from its reference (carries the report)
    │   └── FeatureMismatch         the served feature encoder differs from the training transform
    ├── StoreError                  the tracking database cannot do what was asked
    │   ├── NotFound                a run, experiment or model version does not exist
    │   │   └── DatabaseNotFound    no trainforge database at a URL (opened with create=False)
    │   ├── Ambiguous               a run id prefix matches several runs (lists them)
    │   ├── Conflict                a write collides with existing state
    │   └── StoreUnavailable        the database cannot be reached now (retry, or spill and replay)
    ├── QueryError                  a run filter or sort key is malformed (names the position)
    ├── ObjectStoreError            an object store cannot do what was asked (names key or URI)
    │   └── ObjectNotFound          no object under that key
    ├── ArtifactError               an artifact name or file is unusable
    ├── ValueStoreError             a step's value cannot be stored or read back (names it)
    ├── StepTimedOut                a step ran past its timeout (its process was killed)
    ├── PipelineFailed              a pipeline run ended `failed` (names it and its failed steps)
    ├── CheckpointError             a checkpoint cannot be saved, verified or loaded
    ├── ExportError                 a model cannot be exported, or no export can be served
    ├── TrainingError               training cannot continue (bad model name, NaN loss, ...)
    ├── Preempted                   a preemption signal stopped the process (checkpoint saved)
    ├── Pruned                      a tuning study's pruner stopped a trial's training early
    ├── ResumeRefused               a run cannot be resumed as asked (names the run and why)
    ├── NotReproducible             a run cannot be reproduced from its record (names what lacks)
    ├── PromotionError              a model version cannot move to a stage as asked (names both)
    │   └── GatesFailed             its promotion gates failed (carries the report per gate)
    ├── RunFailed                   a tracked run ended `failed` (names the run; cause chained)
    ├── RunPreempted                a tracked run ended `preempted` (names the run; resumable)
    └── RunPruned                   a tracked run ended `pruned` (names the run; a trial's end)

User errors say where (file, field path, row) and what was expected; `assert` is kept for
internal invariants only.
"""

from __future__ import annotations

from typing import Any


class TrainforgeError(Exception):
    """Base class of every error trainforge raises on purpose."""


class SpecError(TrainforgeError):
    """A spec or contract file is malformed, or a field has the wrong value.

    `problems` lists one line per broken field, each already naming the file and field path.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class DataError(TrainforgeError):
    """Input data cannot be used."""


class DataNotFound(DataError):
    """No file matches the configured data source."""


class DataValidationError(DataError):
    """Rows break the schema contract; `report` says which rule, how often and where."""

    def __init__(self, message: str, report: Any) -> None:
        self.report = report
        super().__init__(message)


class DataDriftError(DataError):
    """The data drifted from its reference beyond the thresholds and `on_drift` is fail;
    `report` is the drift report."""

    def __init__(self, message: str, report: Any) -> None:
        self.report = report
        super().__init__(message)


class FeatureMismatch(DataError):
    """The served feature encoder does not reproduce the training transform on a run's golden
    set; the message names the run, the first row that differs and the feature."""


class StoreError(TrainforgeError):
    """The tracking database cannot do what was asked."""


class NotFound(StoreError):
    """A run, experiment or model version does not exist."""


class DatabaseNotFound(NotFound):
    """There is no trainforge database at the URL a store was opened with `create=False`: a
    SQLite file that does not exist, or a database without trainforge's tables. `where` is the
    SQLite file's path, or the URL with its password masked."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        super().__init__(f"no trainforge database at {where}: {reason}")


class Ambiguous(StoreError):
    """A run id prefix matches more than one run; `candidates` holds some of their ids (the
    message says how many match) and a longer prefix tells them apart."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        self.candidates = list(candidates)
        super().__init__(message)


class Conflict(StoreError):
    """A write collides with existing state."""


class StoreUnavailable(StoreError):
    """The database cannot be reached now (connection refused or lost, lock wait timed out)."""


class QueryError(TrainforgeError):
    """A run filter or sort key is malformed; the message names the position and what was
    expected there, and `position` holds it (0-based, into `text`)."""

    def __init__(self, text: str, position: int, message: str) -> None:
        self.text = text
        self.position = position
        super().__init__(f"{text!r} at position {position}: {message}")


class ObjectStoreError(TrainforgeError):
    """An object store refused a key or failed to list, write, read or delete.

    `where` names the key or URI, `problem` says what went wrong or what was expected.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


class ObjectNotFound(ObjectStoreError):
    """No object is stored under the key."""


class ArtifactError(TrainforgeError):
    """An artifact name or file is unusable."""


class ValueStoreError(TrainforgeError):
    """A value passed between steps cannot be encoded, stored, found or decoded; the message
    names the value (its step and output, or its key) and why."""


class StepTimedOut(TrainforgeError):
    """A step ran longer than its `timeout`; its process was killed (a failed attempt)."""


class PipelineFailed(TrainforgeError):
    """A pipeline run ended `failed`: names the pipeline run and its failed steps; the first
    step's error is chained as the cause. `trainforge resume PIPELINE_RUN` continues it."""

    def __init__(self, pipeline_run_id: str, failed: dict[str, str]) -> None:
        self.pipeline_run_id = pipeline_run_id
        self.failed = dict(failed)
        listed = "; ".join(f"{step}: {error}" for step, error in failed.items())
        super().__init__(f"pipeline run {pipeline_run_id} failed: {listed}")


class CheckpointError(TrainforgeError):
    """A checkpoint cannot be saved, verified or loaded; the message names its location."""


class ExportError(TrainforgeError):
    """A model cannot be exported, or an exported file cannot be loaded; names the run and
    the file."""


class TrainingError(TrainforgeError):
    """Training cannot start or continue."""


class Preempted(TrainforgeError):
    """A preemption signal (SIGTERM, or one configured) asked the process to stop.

    `signal` names it; `step` is the global step whose checkpoint was saved before stopping
    (None when the signal came outside training, before any step).
    """

    def __init__(self, signal: str, step: int | None = None) -> None:
        self.signal = signal
        self.step = step
        where = f" after step {step} (checkpoint saved)" if step is not None else ""
        super().__init__(f"preempted by {signal}{where}")


class Pruned(TrainforgeError):
    """A tuning study's pruner judged a trial unpromising at `step` (its report `value`);
    training stopped at that step boundary."""

    def __init__(self, step: int, value: float) -> None:
        self.step = step
        self.value = value
        super().__init__(f"pruned at step {step} (objective {value:g})")


class RunFailed(TrainforgeError):
    """A tracked run ended `failed`; `run_id` names it and `__cause__` holds the reason."""

    def __init__(self, run_id: str, cause: BaseException) -> None:
        self.run_id = run_id
        super().__init__(f"run {run_id} failed: {cause}")


class ResumeRefused(TrainforgeError):
    """A run cannot be resumed as asked: it completed, still runs, belongs to another pipeline,
    or the spec given now differs from the one it recorded (the message lists each change)."""


class NotReproducible(TrainforgeError):
    """A run cannot be reproduced from its record: `missing` lists each thing that lacks (the
    stored data, the commit, a credential, ...), found before anything ran."""

    def __init__(self, run_id: str, missing: list[str]) -> None:
        self.run_id = run_id
        self.missing = list(missing)
        super().__init__(f"run {run_id} cannot be reproduced:\n"
                         + "\n".join(f"  - {line}" for line in self.missing))


class PromotionError(TrainforgeError):
    """A model version cannot move to a stage as asked: the move is not allowed from its
    stage (the message names both and the moves that are), or `--force` came without a
    reason."""


class GatesFailed(PromotionError):
    """A promotion's gates failed and it was refused (recorded in the stage history);
    `report` holds every gate's result (dicts: gate, passed, figures, message)."""

    def __init__(self, message: str, report: list[dict[str, Any]]) -> None:
        self.report = list(report)
        super().__init__(message)


class RunPreempted(TrainforgeError):
    """A tracked run ended `preempted`; `run_id` names it, `__cause__` is the `Preempted`."""

    def __init__(self, run_id: str, cause: Preempted) -> None:
        self.run_id = run_id
        self.step = cause.step
        super().__init__(f"run {run_id} {cause}")


class RunPruned(TrainforgeError):
    """A tracked run ended `pruned`; `run_id` names it, `__cause__` is the `Pruned`."""

    def __init__(self, run_id: str, cause: Pruned) -> None:
        self.run_id = run_id
        self.step = cause.step
        super().__init__(f"run {run_id} {cause}")
