"""`run_pipeline` called from Python: a spec object, trainer callbacks, a parent run, system
state kept apart from params and tags, and `resume: auto` matching by spec hash."""

from __future__ import annotations

import os
import socket

import pytest
from home import home_store

from trainforge.config import Settings, load_spec
from trainforge.entities import RunStatus
from trainforge.errors import SpecError
from trainforge.pipeline import plan_pipeline, run_pipeline
from trainforge.tracking import start_run
from trainforge.train import Callback, process_group

ONE_EPOCH = ["training.epochs=1"]


class StopAfterEpochs(Callback):
    """What a tuning trial's pruner does: stop at an epoch end."""

    def __init__(self, epochs: int) -> None:
        self.epochs = epochs
        self.seen: list[int] = []

    def on_epoch_end(self, trainer) -> None:
        self.seen.append(trainer.state.epoch)
        if len(self.seen) >= self.epochs:
            trainer.state.should_stop = True


def test_a_spec_object_runs_with_callbacks_under_a_parent(fraud_project, tmp_path):
    spec = load_spec(fraud_project / "pipeline.yaml")
    stop = StopAfterEpochs(1)
    with start_run("study", code_dir=tmp_path) as parent:
        result = run_pipeline(spec, ["training.epochs=3"], callbacks=[stop], parent=parent)
    run = home_store().get_run(result.run.run_id)
    assert run.parent_run_id == parent.run_id
    assert run.status is RunStatus.COMPLETED and run.params["training"]["epochs"] == 3
    assert stop.seen == [1]
    assert len(home_store().get_metric_history(run.run_id, "val_loss").items) == 1
    assert run.system["spec"] == {"path": None, "overrides": ["training.epochs=3"],
                                  "redacted": []}


def test_system_state_is_kept_apart_from_params_and_tags(fraud_project):
    path = fraud_project / "pipeline.yaml"
    result = run_pipeline(path, ONE_EPOCH)
    run = home_store().get_run(result.run.run_id)
    assert run.system["process"] == {"host": socket.gethostname(), "pid": os.getpid(),
                                     "user": Settings.from_env().user}
    assert run.system["spec"] == {"path": str(path), "overrides": ONE_EPOCH, "redacted": []}
    checkpoint = run.system["checkpoint"]
    assert checkpoint["location"] == f"{run.artifact_uri}/checkpoints"
    assert checkpoint["policy"]["keep_last"] == 3
    assert run.spec_hash == plan_pipeline(path, ONE_EPOCH).spec_hash
    assert not {"process", "spec", "checkpoint"} & set(run.tags)
    assert set(run.params) == {"name", "experiment", "data", "features", "model", "training",
                               "evaluation", "registry", "tracking", "tuning", "submit",
                               "steps"}


def test_resume_auto_finds_an_abandoned_run_whatever_its_resume_mode_and_cadence(
    fraud_project
):
    path = fraud_project / "pipeline.yaml"
    first = run_pipeline(path, ONE_EPOCH).run.run_id
    store = home_store()
    store.end_run(first, RunStatus.FAILED, "killed")  # as if killed after its last checkpoint

    again = run_pipeline(path, [*ONE_EPOCH, "training.checkpoint.resume=auto",
                                "training.log_every_n_steps=5", "training.progress=plain"])
    assert again.run.run_id == first
    assert store.get_run(first).status is RunStatus.COMPLETED

    store.end_run(first, RunStatus.FAILED, "killed")
    other = run_pipeline(path, ["training.epochs=2", "training.checkpoint.resume=auto"])
    assert other.run.run_id != first  # a different spec trains something else: a new run


def test_a_distributed_strategy_in_this_process_needs_the_entry_points_process_group(
    fraud_project, monkeypatch
):
    path = fraud_project / "pipeline.yaml"
    with pytest.raises(SpecError, match=r"training.strategy: 'ddp' trains in a process group"):
        run_pipeline(path, ["training.strategy=ddp", *ONE_EPOCH])
    assert home_store().list_runs().items == ()

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with process_group("cpu"):  # a group of one, joined by this test as an entry point
        result = run_pipeline(path, ["training.strategy=ddp", *ONE_EPOCH])
    assert result.run.status is RunStatus.COMPLETED
    assert result.run.tags["trainer"]["strategy"] == "ddp"
