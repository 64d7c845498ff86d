"""Every command the README shows, run in its order in a fresh venv with the user extras only
(`.[all]`, no dev), as a user who just cloned the repository would: none may end in a
traceback.

The commands are read from the README itself (the `trainforge ...`, `python ...` and `curl ...`
lines of its code blocks), and `PLANS` says for each how it runs here: its placeholders
(RUN_ID, PIPELINE_RUN, ...) filled from earlier commands' `--json` output, a smaller budget
where a study would take many minutes, the exit codes it may end with where the README shows it
refused, and the preparation a README line takes for granted (a tag it names, a file it reads).
A README command without a plan fails the test: add one. `make setup` is replaced by what it
does (uv, the lock, torch from the wheel on disk), `make demo` by its two commands, with a
twelfth of the demo's data (`DEMO_DATA`): each fraud run then takes seconds, not minutes, and
passes the same gate.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
COMMAND_TIMEOUT_S = 900
FIRST_WORDS = ("trainforge", "python", "curl", "make", ".venv/bin/python", ".venv-peers/bin/python")
DEMO_DATA = "--days 12 --rows 24000"  # `make demo`: 30 days, 300,000 rows


# README commands not run here, by their first words, and why
NOT_RUN = {
    "make demo": "run without make: `user_venv` is its set-up, the test starts with its commands",
    "make test": "the dev set-up and the whole suite, this test among them",
    ".venv/bin/python benchmarks/": "a benchmark: minutes of measuring, in the dev venv",
    ".venv-peers/bin/python benchmarks/": "a benchmark against peer tools, in the venv `make "
    "bench-peers` makes (Lightning, MLflow, Evidently, DVC)",
}


def not_run(command: str) -> str | None:
    """Why the test does not run `command`, or None."""
    return next((why for start, why in NOT_RUN.items() if command.startswith(start)), None)


def readme_commands(text: str) -> list[str]:
    """The commands of the README's indented code blocks, in order: lines that start with one
    of `FIRST_WORDS`, continuation lines joined, comments dropped (`shlex.join` of the words)."""
    commands: list[str] = []
    lines = iter(text.splitlines())
    for line in lines:
        if not line.startswith("    ") or line.split(maxsplit=1)[0] not in FIRST_WORDS:
            continue
        while line.rstrip().endswith("\\"):
            line = line.rstrip()[:-1] + " " + next(lines).strip()
        commands.append(shlex.join(shlex.split(line, comments=True)))
    return commands


def fenced_block(text: str, start: str) -> str:
    """The first fenced code block of the README that starts with `start`."""
    match = re.search(rf"```\w*\n({re.escape(start)}.*?)```", text, re.DOTALL)
    assert match, f"README.md: no code block starting {start!r}"
    return match.group(1)


@dataclass
class Session:
    """The user's shell: the venv's commands first on PATH, the repository's examples in `work`
    (the current folder, so the home is `work/.trainforge`), what earlier commands printed in
    `found`, and the commands left running in the background."""

    venv: Path
    work: Path
    found: dict[str, str] = field(default_factory=dict)
    background: list[tuple[str, subprocess.Popen[str]]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TRAINFORGE_", "PYTHON", "VIRTUAL_ENV"))}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env["DEPLOY_HOOK_SECRET"] = "the receiver's secret"  # `webhooks add` names it
        return env

    def words(self, command: str) -> list[str]:
        """`command`'s words, each placeholder replaced by what was found for it."""
        words = [self.found.get(word, word) for word in shlex.split(command)]
        first = self.venv / "bin" / words[0]
        return [str(first) if first.exists() else words[0], *words[1:]]

    def run(self, command: str, codes: frozenset[int] = frozenset({0})
            ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(self.words(command), cwd=self.work, env=self.env,
                                capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        check_output(command, result.returncode, result.stdout, result.stderr, codes)
        return result

    def start(self, command: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(self.words(command), cwd=self.work, env=self.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.background.append((command, process))
        return process

    def json(self, command: str) -> Any:
        return json.loads(self.run(command).stdout)


def check_output(command: str, code: int, stdout: str, stderr: str,
                 codes: frozenset[int]) -> None:
    shown = f"$ {command}\nexit {code}\n--- stdout\n{stdout[-3000:]}\n--- stderr\n{stderr[-5000:]}"
    assert "Traceback (most recent call last)" not in stdout + stderr, shown
    assert code in codes, shown


@dataclass(frozen=True)
class Plan:
    """How one README command runs here. `run`: the command run instead, when it differs
    (`why` says how); `codes`: the exit codes it may end with; `before` / `after`: what it
    takes for granted / what later commands read from its output."""

    run: str | None = None
    why: str = ""
    codes: frozenset[int] = frozenset({0})
    before: Callable[[Session], None] | None = None
    after: Callable[[Session, subprocess.CompletedProcess[str] | None], None] | None = None
    background: bool = False


# --- what commands take for granted, and what later ones read from them ----------------------

def find_fraud_runs(session: Session) -> None:
    """RUN_ID: the newest completed run of the fraud pipeline; RUN_A, RUN_B, RUN_C: the three
    newest completed runs of the experiment."""
    runs = session.json("trainforge runs list --experiment fraud --filter "
                        "\"status = 'completed'\" --json")  # newest first
    session.found["RUN_ID"] = next(r["run_id"] for r in runs if "test_roc_auc" in r["metrics"])
    session.found.update(zip(["RUN_A", "RUN_B", "RUN_C"], [r["run_id"] for r in runs[:3]]))


def track_from_a_script(session: Session) -> None:
    """The README's script under *Tracking from any script*: its run (RUN_ID) logs `loss`."""
    script = fenced_block(README.read_text(), 'import trainforge\n\nwith trainforge.start_run(')
    (session.work / "track.py").write_text(script)
    session.run("python track.py")
    find_fraud_runs(session)
    session.found["RUN_ID"] = session.found["RUN_A"]


def train_with_a_monitor(session: Session) -> None:
    """`checkpoints gc RUN_ID --keep-best 1` ranks by the run's monitor metric, which the
    example spec leaves unset (a run without one is refused by name): RUN_ID names one."""
    run = session.json("trainforge run examples/fraud/pipeline.yaml "
                       "training.checkpoint.monitor=val_loss --json")
    session.found["RUN_ID"] = run["run_id"]


def preempt_a_run(session: Session) -> None:
    """`--resume RUN_ID` continues a run that stopped: one preempted by SIGTERM after its
    first checkpoint, which prints the command that continues it."""
    before = set(checkpoint_runs(session))
    process = session.start("trainforge run examples/fraud/pipeline.yaml")
    session.background.pop()
    deadline = time.monotonic() + COMMAND_TIMEOUT_S
    # The run is looked at stopped (SIGSTOP), so it cannot finish between seeing its first
    # checkpoint and the SIGTERM: a twelfth of the demo's data trains in about a second.
    while True:
        process.send_signal(signal.SIGSTOP)
        if set(checkpoint_runs(session)) - before:
            break
        process.send_signal(signal.SIGCONT)
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    [run_id] = set(checkpoint_runs(session)) - before
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGCONT)
    stdout, stderr = process.communicate(timeout=300)
    check_output("trainforge run (preempted)", process.returncode, stdout, stderr,
                 frozenset({75}))
    assert f"--resume {run_id}" in stderr
    session.found["RUN_ID"] = run_id


def checkpoint_runs(session: Session) -> list[str]:
    artifacts = session.work / ".trainforge" / "artifacts"
    return [path.parents[2].name for path in artifacts.glob("*/checkpoints/*/MANIFEST.json")]


def restored_is_new(session: Session) -> None:
    shutil.rmtree(session.work / "restored", ignore_errors=True)


def write_pbt_spec(session: Session) -> None:
    """`pipeline.yaml` with tuning.pbt: the fraud spec (PBT refuses the digits spec's early
    stopping) with the README's `tuning:` block."""
    fraud = session.work / "examples" / "fraud"
    tuning = fenced_block(README.read_text(), "tuning:\n  objective: {metric: val_loss, "
                          "direction: minimize}   # val_loss or a val_ metric of the task")
    (fraud / "pbt.yaml").write_text((fraud / "pipeline.yaml").read_text() + "\n" + tuning)
    session.found["pipeline.yaml"] = "examples/fraud/pbt.yaml"


def find_study_run(session: Session, result: subprocess.CompletedProcess[str] | None) -> None:
    assert result is not None
    session.found["STUDY_RUN_ID"] = json.loads(result.stdout)["study_run"]


def write_steps(session: Session) -> None:
    """The README's `mysteps.py` and `steps.yaml`, and the rows `load` reads."""
    text = README.read_text()
    (session.work / "mysteps.py").write_text(fenced_block(text, "# mysteps.py"))
    (session.work / "steps.yaml").write_text(fenced_block(text, "name: demo"))
    write_rows(session)


def write_rows(session: Session) -> None:
    (session.work / "data").mkdir(exist_ok=True)
    (session.work / "data" / "rows.csv").write_text("a,b\n1,2.5\n3,4.5\n5,6.5\n")


def find_pipeline_run(session: Session,
                      result: subprocess.CompletedProcess[str] | None) -> None:
    assert result is not None
    session.found.update(PIPELINE_RUN=json.loads(result.stdout)["pipeline_run_id"], STEP="scale")


def fail_a_pipeline_run(session: Session) -> None:
    """`resume PIPELINE_RUN` continues a failed pipeline run: one whose `load` found no rows,
    which are then written."""
    (session.work / "data" / "rows.csv").unlink()
    failed = session.run("trainforge pipeline run mysteps:pipeline", codes=frozenset({1}))
    session.found["PIPELINE_RUN"] = failed.stderr.split("trainforge resume ")[1].split()[0]
    write_rows(session)


def write_submission(session: Session) -> None:
    """submission.json: the README's `config` of a submission."""
    (session.work / "submission.json").write_text(fenced_block(README.read_text(),
                                                               '{"model_type": "mlp"'))


def start_serving(session: Session) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        session.found["8080"] = str(probe.getsockname()[1])


def await_server(session: Session, _: subprocess.CompletedProcess[str] | None) -> None:
    command, process = session.background[-1]
    deadline = time.monotonic() + 300
    while True:
        assert process.poll() is None, (command, process.communicate())
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{session.found['8080']}/health", timeout=5)
            return
        except urllib.error.HTTPError:  # an answer (503: no production version): it listens
            return
        except (urllib.error.URLError, ConnectionError):
            assert time.monotonic() < deadline, f"{command}: no /health within 300 s"
            time.sleep(0.5)


def new_transactions(session: Session) -> None:
    """new.parquet: a day of transactions, as the feed writes them."""
    day = sorted((session.work / "examples" / "fraud" / "data").glob("*.parquet"))[-1]
    shutil.copy(day, session.work / "new.parquet")


def find_a_delivery(session: Session) -> None:
    """DELIVERY: the outbox's newest delivery (the stage change announced after `webhooks add`)."""
    outbox = session.json("trainforge webhooks outbox --json")
    session.found["DELIVERY"] = str(outbox[0]["delivery"])


def post_as_curl(session: Session, command: str) -> None:
    """The README's `curl -s URL -H HEADER -d BODY`, sent to the server `serve` started."""
    words = iter(shlex.split(command)[2:])
    url = "http://" + next(words).replace("localhost:8080", f"127.0.0.1:{session.found['8080']}")
    options = dict(zip(words, words))
    name, value = options["-H"].split(": ", 1)
    request = urllib.request.Request(url, data=options["-d"].encode(), headers={name: value},
                                     method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    assert answer["model"] == "fraud_detector"
    assert len(answer["predictions"]) == 1, answer


STUDY = "training.epochs=2"
PLANS: dict[str, Plan] = {shlex.join(shlex.split(command)): plan for command, plan in {
    "trainforge runs list": Plan(before=find_fraud_runs),
    "trainforge runs show RUN_ID": Plan(),
    "trainforge models list": Plan(),
    "trainforge models show fraud_detector": Plan(),
    'trainforge models promote fraud_detector 1 --to production --reason "first model"': Plan(),
    "trainforge --version": Plan(),
    "trainforge validate examples/fraud/pipeline.yaml": Plan(),
    "trainforge run examples/fraud/pipeline.yaml training.epochs=2": Plan(),
    "trainforge runs list --experiment fraud --json": Plan(),
    "trainforge run examples/fraud/pipeline.yaml --nproc-per-node 2 training.strategy=ddp": Plan(),
    "trainforge run examples/fraud/pipeline.yaml --resume RUN_ID": Plan(before=preempt_a_run),
    "trainforge run examples/fraud/pipeline.yaml training.checkpoint.resume=auto": Plan(),
    "trainforge data snapshot examples/fraud/data --name fraud": Plan(),
    "trainforge data tag fraud@latest fraud@day10": Plan(),
    "trainforge data list": Plan(),
    "trainforge data diff fraud@day10 fraud": Plan(),
    "trainforge data checkout fraud@day10 restored/": Plan(before=restored_is_new),
    "trainforge run examples/fraud/pipeline.yaml data.version=fraud@day10": Plan(),
    "python examples/fraud/generate.py --append-days 5": Plan(),
    "trainforge reproduce RUN_ID": Plan(before=find_fraud_runs),
    "trainforge data validate examples/fraud/data --contract examples/fraud/contract.yaml": Plan(),
    "trainforge data profile examples/fraud/data": Plan(),
    "trainforge data drift examples/fraud/data --against fraud@day10": Plan(
        codes=frozenset({0, 4}), why="exit 4: drift found, the appended days' timestamps "
        "lie past the reference's"),
    "trainforge run examples/fraud/pipeline.yaml data.streaming=true": Plan(),
    "trainforge tune examples/digits/pipeline.yaml": Plan(
        run=f"trainforge tune examples/digits/pipeline.yaml --trials 2 {STUDY}",
        why="2 trials of 2 epochs, not 12 of up to 40; its refit may then miss the accuracy "
        "gate (exit 3, as `run`)", codes=frozenset({0, 3})),
    "trainforge tune examples/digits/pipeline.yaml --trials 30 --workers 4 --study digits-big":
        Plan(run=f"trainforge tune examples/digits/pipeline.yaml --trials 2 --workers 2 "
             f"--study digits-big {STUDY}", why="2 trials of 2 epochs on 2 workers",
             codes=frozenset({0, 3})),
    "trainforge tune-worker digits-big": Plan(),
    "trainforge tune show digits-big": Plan(),
    "trainforge tune list": Plan(),
    "trainforge pipeline run mysteps:pipeline": Plan(
        run="trainforge pipeline run mysteps:pipeline --json", before=write_steps,
        after=find_pipeline_run),
    "trainforge pipeline list --status failed": Plan(),
    "trainforge pipeline show PIPELINE_RUN": Plan(),
    "trainforge resume PIPELINE_RUN": Plan(before=fail_a_pipeline_run),
    "trainforge explain-cache PIPELINE_RUN STEP": Plan(),
    "trainforge pipeline gc --older-than 30": Plan(),
    "trainforge dag steps.yaml": Plan(),
    'trainforge runs list --experiment fraud --filter "metrics.test_auc > 0.9 and '
    'params.training.optimizer.lr < 1e-3" --sort -metrics.test_auc --limit 20': Plan(
        before=track_from_a_script),
    """trainforge runs list --filter "tags.gates.passed = false or (status = 'failed' and """
    """experiment = 'fraud')\"""": Plan(),
    "trainforge runs compare RUN_A RUN_B RUN_C": Plan(),
    "trainforge runs history RUN_ID loss --max-points 200": Plan(),
    "trainforge runs gc --timeout 300": Plan(),
    "trainforge checkpoints list RUN_ID --all": Plan(before=find_fraud_runs),
    "trainforge checkpoints gc RUN_ID --keep-last 1 --keep-best 1": Plan(
        before=train_with_a_monitor),
    "trainforge tune pipeline.yaml training.epochs=2": Plan(
        run="trainforge tune pipeline.yaml training.epochs=2 --json", before=write_pbt_spec,
        after=find_study_run),
    "trainforge pbt show STUDY_RUN_ID": Plan(),
    'trainforge models promote fraud_detector 3 --to canary --reason "shadow 5% of traffic"':
        Plan(codes=frozenset({0, 3}), why="refused (exit 3) by the export_parity gate of a "
             "version not exported"),
    'trainforge models promote fraud_detector@canary --to production --reason "held a day"':
        Plan(codes=frozenset({0, 1, 3}), why="refused when no version reached canary (exit 1) "
             "or by a gate (exit 3)"),
    "trainforge models history fraud_detector": Plan(),
    "trainforge models diff fraud_detector 2 3": Plan(),
    "trainforge models lineage fraud_detector@production": Plan(),
    "trainforge models alias fraud_detector champion 3": Plan(),
    "trainforge webhooks add https://deploy.example/hooks --events model.stage_changed "
    "--secret-env DEPLOY_HOOK_SECRET": Plan(),
    "trainforge webhooks list": Plan(),
    "trainforge models promote fraud_detector 2 --to archived": Plan(),
    "trainforge webhooks deliver": Plan(),
    "trainforge webhooks outbox --state dead": Plan(),
    "trainforge webhooks deliveries": Plan(),
    "trainforge webhooks redeliver DELIVERY": Plan(
        before=find_a_delivery, codes=frozenset({0, 2}), why="refused (exit 2) while the "
        "delivery is pending: deploy.example is not reachable here, so it is retried, not dead"),
    "trainforge pipelines register examples/fraud/pipeline.yaml --id fraud_model_v2": Plan(),
    "trainforge pipelines show fraud_model_v2": Plan(),
    "trainforge pipelines resolve fraud_model_v2 --config submission.json": Plan(
        before=write_submission),
    "trainforge export fraud_detector 1 --int8": Plan(),
    "trainforge serve fraud_detector --port 8080": Plan(
        before=start_serving, background=True, after=await_server),
    "trainforge predict fraud_detector@production --input new.parquet --output scores.parquet":
        Plan(before=new_transactions),
}.items()}
POSTED = "curl"  # the README's request to the server `serve` started, sent by `post_as_curl`


@pytest.fixture(scope="session")
def user_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv as `make setup` makes it, without make: torch from the wheel pip would install
    (on this disk), then `-e .[all]` with uv, pinned by the lock and held to that torch, its
    bytecode compiled."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        pytest.skip("needs uv (the dev extra installs it)")
    torch_version = version("torch")
    wheels = [wheel for folder in pip_find_links() for wheel in
              Path(folder).glob(f"torch-{torch_version}-cp{sys.version_info.major}"
                                f"{sys.version_info.minor}-*.whl")]
    if not wheels:
        pytest.skip(f"no torch {torch_version} wheel in pip's find-links {pip_find_links()}: "
                    "the test installs no torch from an index")
    venv = tmp_path_factory.mktemp("user") / "venv"
    constraint = venv.parent / "torch-constraint.txt"
    constraint.write_text(f"torch=={torch_version}\n")
    python = str(venv / "bin" / "python")
    for command in (
        [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
        [uv, "pip", "install", "--quiet", "--python", python, "--no-deps", str(wheels[0])],
        [uv, "pip", "install", "--quiet", "--python", python, "-c", str(REPO / "constraints.txt"),
         "-b", str(REPO / "constraints.txt"), "-c", str(constraint), "--compile-bytecode",
         "-e", f"{REPO}[all]"],
    ):
        subprocess.run(command, check=True, timeout=COMMAND_TIMEOUT_S)
    return venv


def pip_find_links() -> list[str]:
    """The folders pip reads wheels from besides its index (its configuration, PIP_FIND_LINKS)."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                            capture_output=True, text=True).stdout
    links = [line.split("=", 1)[1].strip("'\"") for line in listed.splitlines()
             if line.split("=", 1)[0].endswith("find-links")]
    links += os.environ.get("PIP_FIND_LINKS", "").split()
    return sorted({link.removeprefix("file://") for link in links for link in link.split()
                   if Path(link.removeprefix("file://")).is_dir()})


def test_the_readme_lists_a_plan_for_each_command() -> None:
    commands = readme_commands(README.read_text())
    unplanned = [c for c in commands
                 if c not in PLANS and not c.startswith(POSTED) and not_run(c) is None]
    assert not unplanned, f"README commands with no plan in {__file__}: {unplanned}"
    assert not set(PLANS) - set(commands), "plans for commands the README no longer shows"


@pytest.mark.slow
@pytest.mark.timeout(2700)  # some 70 commands: 7 minutes here, 14 on a machine half as fast
def test_every_readme_command_runs_without_a_traceback(user_venv: Path, tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("data", "__pycache__"))
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "clone"]):  # as if cloned
        subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args],
                       cwd=tmp_path, check=True)
    session = Session(user_venv, tmp_path)
    # `make demo`, after `make setup` (the fixture)
    session.run(f"python examples/fraud/generate.py --out examples/fraud/data {DEMO_DATA}")
    session.run("trainforge run examples/fraud/pipeline.yaml")
    # `make demo-digits` first adds scikit-learn, whose bundled images `prepare.py` writes
    subprocess.run([shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv", "pip",
                    "install", "--quiet", "--python", str(user_venv / "bin" / "python"), "-c",
                    str(REPO / "constraints.txt"), "--compile-bytecode", "scikit-learn>=1.3"],
                   check=True)
    session.run("python examples/digits/prepare.py")
    try:
        for command in readme_commands(README.read_text()):
            if command.startswith(POSTED):
                post_as_curl(session, command)
            elif not_run(command) is None:
                run_planned(session, command, PLANS[command])
    finally:
        for command, process in session.background:
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=60)
            check_output(command, 0, stdout, stderr, frozenset({0, -signal.SIGINT}))


def run_planned(session: Session, command: str, plan: Plan) -> None:
    if plan.before is not None:
        plan.before(session)
    if plan.background:
        session.start(plan.run or command)
        if plan.after is not None:
            plan.after(session, None)
        return
    result = session.run(plan.run or command, plan.codes)
    if plan.after is not None:
        plan.after(session, result)
