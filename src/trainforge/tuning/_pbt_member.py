"""One PBT member: its run, its checkpoints and hyperparameters, and how it trains one interval.

A member holds no trainer between intervals (memory stays that of one trainer, whatever the
population): each interval builds a Trainer from the member's spec, loads the member's newest
checkpoint with the member's hyperparameters put into it, trains to the interval's end, scores
the validation split, and saves a checkpoint of that step (blocking, so it is committed before
any other member may copy it). A member whose save fails goes on from its previous checkpoint.

After an exploit the member's newest checkpoint is the donor's copy and `expected_weights`
the hash of the donor's weights: the next load checks the trainer holds exactly those.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from trainforge.config import PipelineSpec
from trainforge.errors import CheckpointError
from trainforge.evaluate import evaluate_model
from trainforge.models import build_model, output_size
from trainforge.pipeline import Dataset
from trainforge.train import Callback, Trainer, make_loss
from trainforge.train.checkpoint import CheckpointManager
from trainforge.tuning._pbt_space import Values, with_values

if TYPE_CHECKING:
    from trainforge.tracking import RunHandle

log = logging.getLogger("trainforge")


def weights_sha256(model_state: Mapping[str, torch.Tensor]) -> str:
    """The sha256 of a model's tensors: each name, dtype, shape and raw bytes, by name."""
    digest = hashlib.sha256()
    for name in sorted(model_state):
        tensor = model_state[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{list(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


class StopAt(Callback):
    """Stops training after global step `step` (the end of an interval)."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.fired = False

    def on_step_end(self, trainer: Trainer) -> None:
        if trainer.state.global_step >= self.step:
            trainer.state.should_stop = self.fired = True


@dataclass
class PbtMember:
    """A member of the population: index, run, checkpoints, hyperparameters and the spec
    they make (the study's spec with `values` set)."""

    index: int
    run: RunHandle
    checkpoints: CheckpointManager
    values: Values
    spec: PipelineSpec
    expected_weights: str | None = None

    def build_trainer(self, dataset: Dataset, callbacks: tuple[Callback, ...] = ()) -> Trainer:
        """A Trainer of the member's spec (the same seed, so the same initial weights and
        batch order for every member), reporting to its run, saving no checkpoints itself."""
        spec = self.spec
        with torch.random.fork_rng():
            torch.manual_seed(spec.training.seed)
            model = build_model(spec.model, dataset.num_features,
                                output_size(spec.model.task, len(dataset.classes)))
        return Trainer(model, dataset.train, dataset.val, spec.training, spec.model.task,
                       self.run, spec.evaluation, callbacks)

    def restore(self, trainer: Trainer, expected_step: int) -> int:
        """Load the newest checkpoint that verifies, with this member's hyperparameters, into
        `trainer`; drop the run's points after its step. Returns that step (0: none is left,
        training starts over; an error instead when an exploit's copy should be there)."""
        try:
            state, info = self.checkpoints.load()
        except CheckpointError as exc:
            if self.expected_weights is not None:
                raise
            if expected_step:
                log.warning("pbt member %d: trains again from step 0: %s", self.index, exc)
            self.run.truncate_metrics(-1)
            return 0
        trainer.load_state_dict(with_values(state, self.values))
        if info.step != expected_step:
            log.warning("pbt member %d: resumes from step %d, its checkpoint of step %d is "
                        "gone", self.index, info.step, expected_step)
        self.run.truncate_metrics(info.step)
        self._check_weights(trainer.module)
        return info.step

    def save(self, trainer: Trainer, scores: Mapping[str, float]) -> str | None:
        """Commit the checkpoint of the trainer's step, ranked by `scores`; None, or why it
        failed. A failed save costs the member its interval (it resumes from its previous
        checkpoint) and keeps it from donating, rather than failing the whole population."""
        state = trainer.state
        try:
            self.checkpoints.save(state.global_step, trainer.state_dict(), epoch=state.epoch,
                                  metrics=scores, blocking=True)
        except CheckpointError as exc:
            log.warning("pbt member %d: saving the checkpoint of step %d failed: %s",
                        self.index, state.global_step, exc)
            return str(exc)
        return None

    def _check_weights(self, module: nn.Module) -> None:
        if self.expected_weights is None:
            return
        found = weights_sha256(module.state_dict())
        if found != self.expected_weights:
            raise CheckpointError(
                f"pbt member {self.index}: the weights loaded from {self.checkpoints.location} "
                f"hash to {found}, not to the donor's {self.expected_weights}")
        self.expected_weights = None


@torch.no_grad()
def score(trainer: Trainer, dataset: Dataset) -> dict[str, float]:
    """`val_loss` and the task's validation metrics of the trainer's model now."""
    module, task = trainer.module, trainer.task
    features, targets = dataset.val
    report = evaluate_model(module, features, targets, task, trainer.evaluation, "val")
    device = next(module.parameters()).device
    output = module(torch.from_numpy(features).to(device)).float()
    target = torch.from_numpy(targets).to(device)
    loss_fn = make_loss(task, trainer.config.pos_weight).to(device)
    loss = loss_fn(output if task == "multiclass" else output.squeeze(-1), target)
    return {"val_loss": float(loss.item()), **report.prefixed()}

