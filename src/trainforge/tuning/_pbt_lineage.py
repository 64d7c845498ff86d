"""The lineage of a PBT study: what each interval scored, and every exploit (who copied whom, at
which step, which checkpoint with which weights, which hyperparameters before and after), or
why a planned exploit did not happen.

Stored on the study run as artifact `pbt/lineage.json` (`Lineage.to_json`) and drawn as
`pbt/lineage.png` (`plot_lineage`, matplotlib's Agg backend: no display needed).
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainforge.storage.artifacts import ArtifactStore

LINEAGE_ARTIFACT = "pbt/lineage.json"
PLOT_ARTIFACT = "pbt/lineage.png"


@dataclass(frozen=True)
class IntervalScores:
    """The objective of each member (by index) at the end of one interval, and the
    hyperparameters it trained that interval with."""

    interval: int
    step: int
    scores: dict[int, float]
    values: dict[int, dict[str, Any]]


@dataclass(frozen=True)
class ExploitRecord:
    """One planned exploit after interval `interval` (ending at `step`): `recipient` copies the
    checkpoint of `donor` when `exploited`; otherwise `reason` says why it kept its own
    weights and hyperparameters. `weights_sha256` is the hash of the donor checkpoint's model
    tensors, which the recipient's copy was checked to hold; `before`/`after` are the
    recipient's hyperparameters."""

    interval: int
    step: int
    recipient: int
    donor: int
    exploited: bool
    reason: str | None = None
    donor_checkpoint: str | None = None
    donor_checkpoint_step: int | None = None
    recipient_checkpoint: str | None = None
    weights_sha256: str | None = None
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)

    def changes(self) -> dict[str, tuple[Any, Any]]:
        """The hyperparameters that changed: path -> (before, after)."""
        return {path: (self.before.get(path), value) for path, value in self.after.items()
                if self.before.get(path) != value}


@dataclass(frozen=True)
class Lineage:
    """A study's whole record: the objective, each interval's scores and every exploit."""

    metric: str
    direction: str
    population: int
    intervals: list[IntervalScores] = field(default_factory=list)
    exploits: list[ExploitRecord] = field(default_factory=list)

    def to_json(self) -> bytes:
        """Strict JSON: a score that is not a number (a diverged member) is null."""
        data = asdict(self)
        for item in data["intervals"]:
            item["scores"] = {k: v if math.isfinite(v) else None
                              for k, v in item["scores"].items()}
        return json.dumps(data, indent=2, sort_keys=True, allow_nan=False).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Lineage:
        raw = json.loads(data)
        intervals = [IntervalScores(
            interval=item["interval"], step=item["step"],
            scores={int(k): math.nan if v is None else float(v)
                    for k, v in item["scores"].items()},
            values={int(k): dict(v) for k, v in item["values"].items()},
        ) for item in raw["intervals"]]
        exploits = [ExploitRecord(**item) for item in raw["exploits"]]
        return cls(raw["metric"], raw["direction"], raw["population"], intervals, exploits)

    def member_exploits(self, member: int) -> list[ExploitRecord]:
        """The exploits planned for `member` as recipient, in order."""
        return [record for record in self.exploits if record.recipient == member]


def plot_lineage(lineage: Lineage) -> bytes:
    """A PNG: the objective of each member per interval (top), and the exploits as arrows from
    donor to recipient at their step, crosses where an exploit was refused (bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, (scores, tree) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for member in range(lineage.population):
        points = [(i.step, i.scores[member]) for i in lineage.intervals if member in i.scores]
        scores.plot([s for s, _ in points], [v for _, v in points], marker="o",
                    label=f"member {member}")
        tree.axhline(member, color="lightgray", linewidth=1, zorder=0)
    scores.set_ylabel(lineage.metric)
    scores.set_title(f"PBT: {lineage.metric} ({lineage.direction}) per member")
    scores.legend(fontsize="small", ncol=2)
    for record in lineage.exploits:
        if record.exploited:
            tree.annotate("", xy=(record.step, record.recipient),
                          xytext=(record.step, record.donor),
                          arrowprops={"arrowstyle": "->", "color": "tab:blue"})
        else:
            tree.plot(record.step, record.recipient, marker="x", color="tab:red")
    tree.set_xlabel("step")
    tree.set_ylabel("member")
    tree.set_yticks(range(lineage.population))
    tree.set_title("exploits: donor → recipient (× refused)")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


def read_lineage(run_id: str, artifacts: ArtifactStore) -> Lineage:
    """The lineage a PBT study run stored (`ArtifactError` when the run has none)."""
    return Lineage.from_json(artifacts.get_bytes(run_id, LINEAGE_ARTIFACT))
