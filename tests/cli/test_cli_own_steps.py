"""Pipelines of one's own steps as a new user meets them: a step's path params are relative to
its YAML file (run from another folder), the console says why a step is retried, what a step
logs in a process of its own is shown like the rest, and `trainforge dag` draws a training
spec that has `steps:`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from fraud_fixtures import EXAMPLE

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))
STEPS = '''
    from trainforge.orchestration import StepContext


    def count(path: str = "rows.csv") -> int:
        return len(open(path).read().splitlines()) - 1


    def flaky(rows: int, ctx: StepContext) -> int:
        if ctx.attempt == 1:
            raise RuntimeError("the first attempt always fails")
        return rows


    def announce(rows: int, ctx: StepContext) -> int:
        ctx.log.info("announcing %d rows from a process of my own", rows)
        return rows
'''
PIPELINE = '''
    name: own
    steps:
      - {name: count, uses: "own_steps:count", outputs: [rows], params: {path: data/rows.csv},
         data: [path]}
      - {name: flaky, uses: "own_steps:flaky", inputs: {rows: rows}, outputs: [checked],
         retries: 2, backoff: 0, retry_on: [error]}
      - {name: announce, uses: "own_steps:announce", inputs: {rows: checked}, outputs: [told],
         timeout: 120}
'''


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRAINFORGE, *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def test_own_steps_read_paths_beside_their_yaml_and_say_what_happens(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "rows.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
    (project / "own_steps.py").write_text(textwrap.dedent(STEPS).lstrip())
    (project / "steps.yaml").write_text(textwrap.dedent(PIPELINE).lstrip())

    ran = cli(tmp_path, "pipeline", "run", "project/steps.yaml")  # from the parent folder

    assert ran.returncode == 0, ran.stderr
    assert "step flaky     retrying (attempt 1: error: RuntimeError: the first attempt " \
        "always fails" in ran.stderr
    assert "announcing 3 rows from a process of my own" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_dag_draws_a_training_spec_with_steps_of_its_own(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE / "contract.yaml", tmp_path / "contract.yaml")
    (tmp_path / "own_steps.py").write_text(textwrap.dedent(STEPS).lstrip())
    spec = (EXAMPLE / "pipeline.yaml").read_text() + textwrap.dedent('''
        steps:
          - {name: announce, uses: "own_steps:announce", inputs: {rows: raw}, outputs: [told]}
    ''')
    (tmp_path / "pipeline.yaml").write_text(spec)

    drawn = cli(tmp_path, "dag", "pipeline.yaml", "--dot", "-")

    assert drawn.returncode == 0, drawn.stderr
    assert '"validate" -> "announce" [label="raw"];' in drawn.stdout
    assert '"features" -> "train" [label="dataset"];' in drawn.stdout
