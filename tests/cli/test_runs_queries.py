"""`trainforge runs list --filter --sort`, `compare`, `history`, `gc`, `replay` (in-process)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from trainforge.cli import app
from trainforge.tracking import default_store, start_run


@pytest.fixture
def runs(tmp_path):
    """Three runs of 'fraud' and one of 'churn', in the default (isolated) store."""
    made = []
    for experiment, auc, lr in [("fraud", 0.95, 1e-4), ("fraud", 0.91, 1e-2),
                                ("fraud", 0.80, 5e-4), ("churn", 0.99, 1e-4)]:
        with start_run(experiment, {"training": {"optimizer": {"lr": lr}, "epochs": 3}},
                       code_dir=tmp_path) as run:
            for step in range(300):
                run.log_metric("loss", 1.0 / (step + 1), step)
            run.set_summary({"test_auc": auc})
        made.append(run.run_id)
    return made


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_list_filters_sorts_and_limits(runs):
    result = invoke("runs", "list", "--experiment", "fraud", "--filter",
                    "metrics.test_auc > 0.9 and params.training.optimizer.lr < 1e-3",
                    "--sort", "-metrics.test_auc", "--json")
    assert result.exit_code == 0, result.output
    assert [r["run_id"] for r in json.loads(result.stdout)] == [runs[0]]
    table = invoke("runs", "list", "--sort", "-metrics.test_auc", "--limit", "2").stdout
    lines = table.splitlines()
    assert lines[0].split() == ["run_id", "experiment", "status", "started", "seconds",
                                "test_auc"]
    assert [line.split()[0] for line in lines[1:]] == [runs[3], runs[0]]
    assert [line.split()[-1] for line in lines[1:]] == ["0.99", "0.95"] and "─" not in table


def test_list_shows_each_metric_once_by_its_full_name(tmp_path):
    metrics = [{"test_roc_auc": 0.91, "val_roc_auc": 0.93, "test_accuracy": 0.8, "test_f1": 0.7,
                "test_mse": 0.1},
               {"test_roc_auc": 0.81, "val_roc_auc": 0.85}]
    for summary in metrics:
        with start_run("fraud", code_dir=tmp_path) as run:
            run.set_summary(summary)
    table = invoke("runs", "list", "--sort", "-metrics.val_roc_auc",
                   "--filter", "metrics.test_roc_auc > 0.5 or metrics.val_roc_auc > 0.5").stdout
    lines = [line.split() for line in table.splitlines()]
    assert lines[0][5:] == ["val_roc_auc", "test_roc_auc", "test_accuracy", "test_f1"]
    assert lines[1][5:] == ["0.93", "0.91", "0.8", "0.7"]
    assert lines[2][5:] == ["0.85", "0.81", "-", "-"]


@pytest.mark.parametrize(("args", "message"), [
    (["--filter", "metrics.test_auc >> 0.9"],
     "--filter 'metrics.test_auc >> 0.9' at position 18: expected a number, a quoted string"),
    (["--filter", "(status = 'failed'"],
     "--filter \"(status = 'failed'\" at position 18: expected 'and', 'or' or ')'"),
    (["--sort", "-bogus"], "--sort '-bogus' at position 1: cannot sort by 'bogus'"),
])
def test_a_bad_filter_or_sort_exits_2_naming_the_position(runs, args, message):
    result = invoke("runs", "list", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_unknown_experiment_exits_1(runs):
    result = invoke("runs", "list", "--experiment", "nope")
    assert result.exit_code == 1 and "experiment 'nope' not found" in result.stderr


def test_compare_shows_differing_params_and_final_metrics(runs):
    result = invoke("runs", "compare", runs[0], runs[1], runs[2], "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["params"] == {"training.optimizer.lr": [1e-4, 1e-2, 5e-4]}
    assert shown["same_params"] == 1  # training.epochs
    assert shown["metrics"]["test_auc"] == [0.95, 0.91, 0.8]
    assert shown["metrics"]["loss"] == [1 / 300] * 3
    table = invoke("runs", "compare", runs[0], runs[1]).stdout.splitlines()
    assert table[0].split() == ["field", runs[0][:8], runs[1][:8]]
    assert table[1].split() == ["params.training.optimizer.lr", "0.0001", "0.01"]


@pytest.mark.parametrize(("args", "code", "message"), [
    (["nope", "other"], 1, "run 'nope' not found"),
    (["only-one"], 2, "compare needs at least two run ids"),
])
def test_compare_bad_arguments(runs, args, code, message):
    result = invoke("runs", "compare", *args)
    assert result.exit_code == code and message in result.stderr


def test_a_run_id_may_be_shortened_to_a_unique_prefix(runs):
    short = runs[0][:8]
    assert json.loads(invoke("runs", "show", short, "--json").stdout)["run_id"] == runs[0]
    history = json.loads(invoke("runs", "history", short, "loss", "--json").stdout)
    assert len(history) == 300
    compared = json.loads(invoke("runs", "compare", short, runs[1][:5], "--json").stdout)
    assert compared["runs"] == [runs[0], runs[1]]


def test_an_ambiguous_prefix_exits_1_listing_the_runs_it_matches(runs):
    store = default_store()
    experiment = store.get_or_create_experiment("fraud").experiment_id
    for run_id in ("abc1", "abc2"):
        store.create_run(experiment, {}, {}, "unused", run_id=run_id)
    for args in (["runs", "show", "abc"], ["runs", "history", "abc", "loss"],
                 ["runs", "compare", runs[0], "abc"], ["checkpoints", "list", "abc"]):
        result = invoke(*args)
        assert result.exit_code == 1
        assert result.stderr == ("run id 'abc' is ambiguous: 2 runs start with it (abc1, abc2); "
                                 "give more of the id\n")


def test_history_downsamples_on_request(runs):
    full = json.loads(invoke("runs", "history", runs[0], "loss", "--json").stdout)
    assert [p["step"] for p in full] == list(range(300))
    small = json.loads(invoke("runs", "history", runs[0], "loss", "--max-points", "20",
                              "--json").stdout)
    assert len(small) <= 20 and small[0]["value"] == 1.0
    assert invoke("runs", "history", "nope", "loss").exit_code == 1
    assert invoke("runs", "history", runs[0], "loss", "--max-points", "1").exit_code == 2


def test_gc_and_replay_report_what_they_did(runs):
    store = default_store()
    open_run = start_run("fraud", store=store)
    result = invoke("runs", "gc", "--timeout", "3600")
    assert result.exit_code == 0 and result.stdout.strip().endswith("0 run(s) marked crashed")
    open_run.end()
    assert json.loads(invoke("runs", "replay", "--json").stdout) == {}
    assert invoke("runs", "gc", "--timeout", "0").exit_code == 2


def test_a_nested_run_names_its_parent_in_show_and_list(tmp_path):
    with start_run("study", code_dir=tmp_path) as parent:
        with start_run("study", parent=parent, code_dir=tmp_path) as child:
            pass

    shown = json.loads(invoke("runs", "show", child.run_id, "--json").stdout)
    listed = {r["run_id"]: r for r in json.loads(invoke("runs", "list", "--json").stdout)}

    assert shown["parent_run_id"] == parent.run_id
    assert listed[child.run_id]["parent_run_id"] == parent.run_id
    assert listed[parent.run_id]["parent_run_id"] is None


def test_a_running_run_whose_process_is_gone_is_shown_as_such(tmp_path):
    store = default_store()
    with start_run("fraud", code_dir=tmp_path) as alive:
        killed = store.create_run(store.get_or_create_experiment("fraud").experiment_id, {},
                                  {}, "unused", system={"process": {
                                      "host": socket.gethostname(), "pid": _dead_pid()}})
        listed = {r["run_id"]: r for r in json.loads(invoke("runs", "list", "--json").stdout)}
        table = invoke("runs", "list").stdout
        shown = json.loads(invoke("runs", "show", killed.run_id, "--json").stdout)

    assert (listed[killed.run_id]["status"], listed[killed.run_id]["process"]) == (
        "running", "gone")
    assert listed[alive.run_id]["process"] == "alive"
    assert "running, process gone" in table
    assert shown["process"] == "gone"


def _dead_pid() -> int:
    """The pid of a process that has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid
