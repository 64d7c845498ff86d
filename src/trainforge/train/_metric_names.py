"""The names of the metrics the trainer logs, apart from the trainer (no torch), so that a spec
naming one (early stopping, checkpoint monitor) is checked without loading it.

Step metrics (every `log_every_n_steps` optimizer steps and at the end of each epoch):
`train_loss` (mean over the steps since the last log), `lr`, `grad_norm` (before clipping),
`samples_per_s` and `step_time_s`. Epoch metrics: `epoch`, `train_loss_epoch`, `val_loss` and
`val_<metric>` for each evaluation metric of the task. Under DDP/FSDP all are means over ranks.
"""

from __future__ import annotations

from trainforge.evaluate import METRICS_BY_TASK

STEP_METRICS = ("train_loss", "lr", "grad_norm", "samples_per_s", "step_time_s")


def logged_metric_names(task: str, validation: bool = True) -> list[str]:
    """Every metric the trainer logs for `task` (what early stopping may watch)."""
    names = [*STEP_METRICS, "epoch", "train_loss_epoch"]
    if validation:
        names += ["val_loss", *(f"val_{m}" for m in METRICS_BY_TASK[task])]
    return names
