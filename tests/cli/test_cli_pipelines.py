"""Pipelines of user steps from the command line: `pipeline run` (Python and YAML),
`resume` of a pipeline run that failed, `dag`, `explain-cache`, `pipeline show`, `pipeline
gc`."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from home import home_store

from trainforge.config import Settings
from trainforge.entities import StepState
from trainforge.errors import NotFound
from trainforge.orchestration import ValueRef, ValueStore
from trainforge.storage.objects import open_object_store

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
CHAIN = '''
    from pathlib import Path

    import chain_fix
    from trainforge.orchestration import Pipeline, step


    @step(outputs=["v1"])
    def start(log: str = "executions.log") -> int:
        Path(log).open("a").write("s1\\n")
        return 1


    @step
    def add(value: int, log: str = "executions.log", name: str = "", by: int = 1) -> int:
        Path(log).open("a").write(name + "\\n")
        return value + by


    @step
    def checked_add(value: int, log: str = "executions.log", name: str = "") -> int:
        Path(log).open("a").write(name + "\\n")
        chain_fix.check()
        return value + 1


    def _link(number: int):
        made = checked_add if number == 7 else add
        return made.using(name=f"s{number}", inputs={"value": f"v{number - 1}"},
                          outputs=[f"v{number}"], params={"name": f"s{number}"})


    pipeline = Pipeline([start.using(name="s1"), *(_link(n) for n in range(2, 11))],
                        name="chain")
'''
STEPS_YAML = '''
    name: yaml-chain
    max_parallel: 2
    steps:
      - name: first
        uses: chain:start
        outputs: [v1]
      - name: left
        uses: chain:add
        inputs: {value: v1}
        outputs: [left]
        params: {name: left}
      - name: right
        uses: chain:add
        inputs: {value: v1}
        outputs: [right]
        params: {name: right, by: 5}  # a value of its own: content-addressed, equal ones are one
        retries: 2
        timeout: 120
      - name: join
        uses: chain:add
        inputs: {value: left}
        outputs: [joined]
        params: {name: join}
        after: [right]
'''


def cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, timeout=300,
                          cwd=project)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "chain.py").write_text(textwrap.dedent(CHAIN).lstrip())
    (tmp_path / "chain_fix.py").write_text(
        "def check():\n    raise RuntimeError('step 7 is broken')\n")
    (tmp_path / "steps.yaml").write_text(textwrap.dedent(STEPS_YAML).lstrip())
    return tmp_path


def executed(project: Path) -> list[str]:
    log = project / "executions.log"
    lines = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


@pytest.mark.slow
def test_a_failed_pipeline_run_resumes_at_the_failed_step(project: Path) -> None:
    failed = cli(project, "pipeline", "run", "chain:pipeline")
    assert failed.returncode == 1, failed.stderr
    assert "s7: RuntimeError: step 7 is broken" in failed.stderr
    pipeline_run = re.search(r"trainforge resume (\w+)", failed.stderr).group(1)
    assert executed(project) == ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]
    shown = json.loads(cli(project, "pipeline", "show", pipeline_run[:8], "--json").stdout)
    assert shown["status"] == "failed"
    assert [(s["step"], s["state"]) for s in shown["steps"]][5:] == [
        ("s6", "succeeded"), ("s7", "failed"), ("s8", "skipped"), ("s9", "skipped"),
        ("s10", "skipped")]

    (project / "chain_fix.py").write_text("def check():\n    return None\n")  # the fix
    resumed = cli(project, "resume", pipeline_run, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert executed(project) == ["s7", "s8", "s9", "s10"]  # the failed step and those after
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    attempts = home_store().list_step_runs(pipeline_run)
    last = {a.step: a for a in attempts}
    assert [last[f"s{n}"].attempt for n in range(1, 11)] == [1] * 6 + [2] * 4
    assert all(last[f"s{n}"].state is StepState.SUCCEEDED for n in range(1, 11))
    values = ValueStore(open_object_store(Settings.from_env().artifact_root))
    assert values.get(ValueRef.from_json(last["s10"].outputs["v10"])) == 10

    again = cli(project, "resume", pipeline_run)
    assert again.returncode == 2 and "succeeded; there is nothing to resume" in again.stderr
    missing = cli(project, "resume", "feedbeef")
    assert missing.returncode == 1 and "pipeline run 'feedbeef' not found" in missing.stderr


@pytest.mark.slow
def test_a_second_run_reuses_every_step_and_explains_why(project: Path) -> None:
    first = cli(project, "pipeline", "run", "steps.yaml", "--json")
    assert first.returncode == 0, first.stderr
    assert sorted(executed(project)) == ["join", "left", "right", "s1"]
    second = json.loads(cli(project, "pipeline", "run", "steps.yaml", "--json").stdout)
    assert set(second["steps"].values()) == {"cached"}
    assert executed(project) == []
    hit = cli(project, "explain-cache", second["pipeline_run_id"], "join")
    assert hit.stdout.startswith("hit: key ")

    (project / "chain.py").write_text(
        (project / "chain.py").read_text().replace("return value + by", "return value + by + 1"))
    third = json.loads(cli(project, "pipeline", "run", "steps.yaml", "--json").stdout)
    assert third["steps"] == {"first": "cached", "left": "succeeded", "right": "succeeded",
                              "join": "succeeded"}
    why = cli(project, "explain-cache", third["pipeline_run_id"], "left").stdout
    assert why == "miss: chain.py:add changed\n"
    rerun = json.loads(cli(project, "pipeline", "run", "steps.yaml", "--rerun", "right",
                           "--json").stdout)
    assert rerun["steps"]["right"] == "succeeded" and rerun["steps"]["left"] == "cached"
    assert cli(project, "explain-cache", rerun["pipeline_run_id"],
               "right").stdout == "miss: the step was named by --rerun\n"
    fresh = json.loads(cli(project, "pipeline", "run", "steps.yaml", "--no-cache",
                           "--json").stdout)
    assert set(fresh["steps"].values()) == {"succeeded"}

    listed = json.loads(cli(project, "pipeline", "list", "--json").stdout)
    assert [r["pipeline_run_id"] for r in listed] == [  # newest first
        run["pipeline_run_id"] for run in (fresh, rerun, third, second, json.loads(first.stdout))]
    assert {(r["pipeline"], r["status"]) for r in listed} == {("yaml-chain", "succeeded")}
    table = cli(project, "pipeline", "list", "--limit", "1").stdout
    assert fresh["pipeline_run_id"] in table and second["pipeline_run_id"] not in table


def test_pipeline_list_filters_by_pipeline_and_status_and_refuses_bad_options(
        project: Path) -> None:
    failed = cli(project, "pipeline", "run", "chain:pipeline", "--json")
    assert failed.returncode == 1, failed.stderr
    assert cli(project, "pipeline", "run", "steps.yaml").returncode == 0
    failed_runs = json.loads(cli(project, "pipeline", "list", "--status", "failed",
                                 "--json").stdout)
    chain_runs = json.loads(cli(project, "pipeline", "list", "--pipeline", "chain",
                                "--json").stdout)
    none = cli(project, "pipeline", "list", "--pipeline", "nope")
    bad_status = cli(project, "pipeline", "list", "--status", "done")
    bad_limit = cli(project, "pipeline", "list", "--limit", "0")

    assert [(r["pipeline"], r["status"]) for r in failed_runs] == [("chain", "failed")]
    assert [r["pipeline_run_id"] for r in chain_runs] == [r["pipeline_run_id"]
                                                          for r in failed_runs]
    assert none.returncode == 0 and "no pipeline runs" in none.stdout
    assert bad_status.returncode == 2 and "'done' is not one of" in bad_status.stderr
    assert bad_limit.returncode == 2 and "--limit" in bad_limit.stderr


def test_dag_prints_the_steps_and_writes_dot(project: Path) -> None:
    shown = cli(project, "dag", "steps.yaml")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:4] == [
        "first            - -> v1", "left             v1 -> left", "right            v1 -> right",
        "join             left -> joined  (after right)"]
    dot = (project / "yaml-chain.dot").read_text()
    assert '"first" -> "left" [label="v1"];' in dot
    assert '"right" -> "join" [style=dotted];' in dot


@pytest.mark.parametrize(("edit", "message"), [
    (("uses: chain:add\n    inputs: {value: left}",
      "uses: chain:nothing\n    inputs: {value: left}"),
     "steps[3] (join).uses: 'chain:nothing': module 'chain' has no 'nothing'"),
    (("uses: chain:start", "uses: nowhere.at.all:start"),
     "steps[0] (first).uses: 'nowhere.at.all:start' does not import: ModuleNotFoundError"),
    (("inputs: {value: left}", "inputs: {value: lost}"),
     "step 'join': inputs: 'lost' is produced by no step"),
    (("outputs: [right]", "outputs: [left]"),
     "step 'right': outputs: 'left' is produced by step 'left' too"),
    (("after: [right]", "after: [join]"), "steps join wait on each other"),
    (("params: {name: left}", "params: {nmae: left}"),
     "step 'left' (chain:add): params: 'nmae' is not an argument with a default"),
    (("retries: 2", "retries: -1"), "steps[2] (right).retries: -1 (expected a whole number"),
    (("timeout: 120", "timeout: soon"), "steps[2] (right).timeout: 'soon' (expected seconds"),
])
def test_a_bad_yaml_step_is_refused_naming_the_step_and_field(
        project: Path, edit: tuple[str, str], message: str) -> None:
    spec = project / "steps.yaml"
    text = spec.read_text()
    assert edit[0] in text
    spec.write_text(text.replace(edit[0], edit[1], 1))
    refused = cli(project, "pipeline", "run", "steps.yaml")
    assert refused.returncode == 2
    assert message in refused.stderr
    assert executed(project) == []


@pytest.mark.slow
def test_gc_deletes_the_values_of_old_pipeline_runs_and_the_cache_runs_them_again(
        project: Path) -> None:
    first = cli(project, "pipeline", "run", "steps.yaml", "--json")
    assert first.returncode == 0, first.stderr
    executed(project)
    stored = set(ValueStore(open_object_store(Settings.from_env().artifact_root))
                 .objects.list("values"))
    recent = json.loads(cli(project, "pipeline", "gc", "--json").stdout)
    assert recent == {"deleted": [], "freed_bytes": 0, "kept": len(stored), "unnamed": 0,
                      "dry_run": False}
    collected = json.loads(cli(project, "pipeline", "gc", "--older-than", "0", "--json").stdout)
    assert set(collected["deleted"]) == stored and collected["kept"] == 0
    again = json.loads(cli(project, "pipeline", "run", "steps.yaml", "--json").stdout)
    assert set(again["steps"].values()) == {"succeeded"}
    assert sorted(executed(project)) == ["join", "left", "right", "s1"]
    why = cli(project, "explain-cache", again["pipeline_run_id"], "first").stdout
    assert why == "miss: the stored outputs of the execution with this key are gone\n"
    negative = cli(project, "pipeline", "gc", "--older-than", "-1")
    assert negative.returncode == 2 and "--older-than" in negative.stderr


HOLD = '''
    import time
    from pathlib import Path

    from trainforge.orchestration import Pipeline, step


    @step(outputs=["held"])
    def hold(marker: str = "hold.marker") -> int:
        while Path(marker).exists():
            time.sleep(0.1)
        return 1


    pipeline = Pipeline([hold.using(name="hold")], name="held")
'''


@pytest.mark.slow
def test_resume_refuses_a_pipeline_run_whose_process_lives_and_continues_a_dead_one(
        project: Path) -> None:
    (project / "hold.py").write_text(textwrap.dedent(HOLD).lstrip())
    (project / "hold.marker").touch()
    holder = subprocess.Popen([TRAINFORGE, "pipeline", "run", "hold:pipeline"], cwd=project,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        store = home_store()
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline and holder.poll() is None
            runs = store.list_runs(pipeline_id="held").items
            if runs and "pipeline_run" in runs[0].system:  # named once the row is written
                pipeline_run = runs[0].system["pipeline_run"]
                with contextlib.suppress(NotFound):
                    if any(a.state is StepState.RUNNING
                           for a in store.list_step_runs(pipeline_run)):
                        break
            time.sleep(0.2)
        refused = cli(project, "resume", pipeline_run)
        assert refused.returncode == 2
        assert (f"pipeline run {pipeline_run} is still running (pid {holder.pid} on "
                in refused.stderr), refused.stderr
    finally:
        holder.kill()
        holder.wait()
    (project / "hold.marker").unlink()
    resumed = cli(project, "resume", pipeline_run, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    last = {a.step: a for a in store.list_step_runs(pipeline_run)}
    assert last["hold"].attempt == 2 and last["hold"].state is StepState.SUCCEEDED
