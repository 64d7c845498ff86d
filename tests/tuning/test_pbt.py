"""Population-based training on a small fraud project: every exploit copies the donor's
checkpoint byte for byte and the recipient then trains with the explored hyperparameters; a
donor without a valid checkpoint is not copied; bad PBT specs are refused naming the field."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from example_scripts import EXAMPLES, load_example_script
from live_server import live_server
from safetensors.torch import load_file
from typer.testing import CliRunner

from trainforge.cli._app import app
from trainforge.config import Settings
from trainforge.entities import Role
from trainforge.errors import SpecError
from trainforge.server import create_server_app, issue_token
from trainforge.session import Session
from trainforge.storage import all_items, open_store
from trainforge.storage.artifacts import open_artifact_store
from trainforge.train import Trainer
from trainforge.train.checkpoint import CheckpointWarning
from trainforge.tuning import (
    ExploitRecord,
    PbtListener,
    PbtMember,
    PbtResult,
    read_lineage,
    run_pbt,
)

LR = "training.optimizer.lr"


def tuning(population: int = 4, interval: int = 12, quantile: float = 0.25,
           space: str = f"{LR}: {{type: loguniform, low: 0.00001, high: 0.5}}") -> str:
    return ("tuning={objective: {metric: val_loss, direction: minimize}, "
            f"space: {{{space}}}, pbt: {{population: {population}, interval_steps: {interval}, "
            f"quantile: {quantile}, perturb_factors: [0.5, 2.0], resample_probability: 0}}}}")


BASE = ["training.epochs=2", "training.batch_size=256", "training.checkpoint.keep_last=1"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fraud example's spec and contract with 6,000 generated rows (17 steps an epoch)."""
    root = tmp_path_factory.mktemp("pbt_project")
    shutil.copy(EXAMPLES / "fraud" / "pipeline.yaml", root / "pipeline.yaml")
    shutil.copy(EXAMPLES / "fraud" / "contract.yaml", root / "contract.yaml")
    load_example_script("fraud", "generate.py").generate(root / "data", days=6, rows=6_000,
                                                         seed=7)
    return root


def model_hash(tensors: Mapping[str, torch.Tensor], prefix: str = "") -> str:
    """The test's own hash of a model's tensors: names without `prefix`, dtypes, bytes."""
    digest = hashlib.sha256()
    for name in sorted(n for n in tensors if n.startswith(prefix)):
        tensor = tensors[name].detach().contiguous()
        digest.update(f"{name.removeprefix(prefix)}:{tensor.dtype}:".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def checkpoint_model_hash(folder: str | Path) -> str:
    return model_hash(load_file(Path(folder) / "tensors.safetensors"), "model/")


@dataclass
class Copied:
    """What the test saw on disk right after one exploit's copy."""

    record: ExploitRecord
    same_files: bool
    donor_weights: str
    recipient_weights: str


@dataclass
class Watcher(PbtListener):
    """Looks at the checkpoints at each exploit and at the weights each member loads."""

    copies: list[Copied] = field(default_factory=list)
    refused: list[ExploitRecord] = field(default_factory=list)
    loaded: dict[tuple[int, int], tuple[str, float]] = field(default_factory=dict)

    def on_exploit(self, record: ExploitRecord) -> None:
        if not record.exploited:
            self.refused.append(record)
            return
        assert record.donor_checkpoint and record.recipient_checkpoint
        donor, recipient = Path(record.donor_checkpoint), Path(record.recipient_checkpoint)
        same = all((donor / name).read_bytes() == (recipient / name).read_bytes()
                   for name in ("tensors.safetensors", "state.json", "MANIFEST.json"))
        self.copies.append(Copied(record, same, checkpoint_model_hash(donor),
                                  checkpoint_model_hash(recipient)))

    def on_member_loaded(self, member: PbtMember, step: int, trainer: Trainer) -> None:
        weights = model_hash(trainer.module.state_dict())
        self.loaded[(member.index, step)] = (weights, trainer.optimizer.param_groups[0]["lr"])


@dataclass
class Study:
    result: PbtResult
    watcher: Watcher
    settings: Settings


@pytest.fixture(scope="module")
def study(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Study:
    """4 members, 34 steps each in intervals of 12: exploits after steps 12 and 24."""
    settings = Settings.from_env({"TRAINFORGE_HOME": str(tmp_path_factory.mktemp("pbt_home"))})
    watcher = Watcher()
    store = open_store(settings.database_url.get_secret_value())
    result = run_pbt(project / "pipeline.yaml", [*BASE, tuning()],
                     session=Session(settings, store, open_artifact_store(settings.artifact_root)),
                     listener=watcher)
    return Study(result, watcher, settings)


@pytest.mark.slow  # the shared study takes 10-25 s on our machines
def test_every_exploit_copies_the_donor_checkpoint_byte_for_byte(study: Study) -> None:
    exploits = [r for r in study.result.lineage.exploits if r.exploited]
    assert len(exploits) == 2  # one recipient (a quarter of 4) after each of 2 intervals
    assert [c.record for c in study.watcher.copies] == exploits
    for copied in study.watcher.copies:
        assert copied.same_files, copied.record
        assert copied.recipient_weights == copied.donor_weights
        # the recipient's trainer then holds exactly the donor's weights
        loaded, _ = study.watcher.loaded[(copied.record.recipient, copied.record.step)]
        assert loaded == copied.donor_weights


@pytest.mark.slow  # the shared study takes 10-25 s on our machines
def test_the_recipient_trains_with_the_explored_hyperparameters(study: Study) -> None:
    store = open_store(study.settings.database_url.get_secret_value())
    members = {m.index: m.run_id for m in study.result.members}
    for copied in study.watcher.copies:
        record = copied.record
        explored = record.after[LR]
        assert explored != record.before[LR]
        donor_lr = study.result.lineage.intervals[record.interval - 1].values[record.donor][LR]
        assert explored in [min(0.5, max(1e-5, donor_lr * factor)) for factor in (0.5, 2.0)]
        _, lr = study.watcher.loaded[(record.recipient, record.step)]
        assert lr == pytest.approx(explored)
        history = all_items(lambda cursor, run=members[record.recipient]:
                            store.get_metric_history(run, "lr", cursor=cursor))
        end = min(record.step + 12, 34)  # the next interval's end
        following = [p.value for p in history if record.step < p.step <= end]
        assert len(following) == end - record.step  # the spec logs every step
        assert following == pytest.approx([explored] * len(following))


@pytest.mark.slow  # the shared study takes 10-25 s on our machines
def test_members_are_runs_nested_under_the_study_with_the_lineage(study: Study) -> None:
    store = open_store(study.settings.database_url.get_secret_value())
    artifacts = open_artifact_store(study.settings.artifact_root)
    result = study.result
    assert read_lineage(result.study.run_id, artifacts) == result.lineage
    assert artifacts.get_bytes(result.study.run_id, "pbt/lineage.png")[:8] == b"\x89PNG\r\n\x1a\n"
    for member in result.members:
        run = store.get_run(member.run_id)
        assert run.parent_run_id == result.study.run_id
        assert run.params["training"]["optimizer"]["lr"] == member.values[LR]
        assert run.system["pbt"] == {"study": result.study.run_id, "member": member.index}
        received = [r for r in result.lineage.exploits if r.recipient == member.index]
        assert [e["donor"] for e in run.tags["pbt"]["exploits"]] == [r.donor for r in received]
        assert store.list_checkpoints(member.run_id).items  # its own checkpoints, recorded
    scores = result.lineage.intervals[-1].scores
    assert [m.score for m in result.members] == sorted(scores.values())


@pytest.mark.slow  # the shared study takes 10-25 s on our machines
def test_pbt_show_prints_the_lineage(study: Study, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINFORGE_HOME", str(study.settings.home))
    shown = CliRunner().invoke(app, ["pbt", "show", study.result.study.run_id, "--json"])
    assert shown.exit_code == 0, shown.output
    exploits = json.loads(shown.output)["exploits"]
    assert [(e["recipient"], e["donor"], e["step"]) for e in exploits] == [
        (r.recipient, r.donor, r.step) for r in study.result.lineage.exploits]


def test_the_server_answers_the_lineage_pbt_show_prints(study: Study) -> None:
    session = Session.open(study.settings)
    session.store.add_user("viewer", Role.VIEWER)
    token, _ = issue_token(session.store, "viewer")
    study_run = study.result.study.run_id
    with live_server(create_server_app(session)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        answer = client.get(f"/api/v1/runs/{study_run}/pbt-lineage")
        member = client.get(f"/api/v1/runs/{study.result.members[0].run_id}/pbt-lineage")

    assert answer.status_code == 200, answer.text
    lineage, recorded = answer.json(), study.result.lineage
    assert (lineage["study_run_id"], lineage["metric"], lineage["population"]) == (
        study_run, "val_loss", 4)
    assert [(e["interval"], e["recipient"], e["donor"], e["exploited"], e["weights_sha256"])
            for e in lineage["exploits"]] == [
        (r.interval, r.recipient, r.donor, r.exploited, r.weights_sha256)
        for r in recorded.exploits]
    assert [{int(m): v for m, v in i["scores"].items()} for i in lineage["intervals"]] == [
        {m: v if math.isfinite(v) else None for m, v in i.scores.items()}
        for i in recorded.intervals]
    locations = [r.donor_checkpoint for r in recorded.exploits if r.donor_checkpoint]
    assert locations and not any(where in answer.text for where in locations)  # server-side
    assert member.status_code == 404
    assert "is no population-based training study" in member.json()["detail"]


@dataclass
class Breaker(Watcher):
    """After the first interval, deletes the best member's checkpoint and corrupts the second
    best's (one byte of its weights file, same size); notes the others' own weights."""

    broken: dict[int, str] = field(default_factory=dict)
    own: dict[int, str] = field(default_factory=dict)

    def on_interval_end(self, interval: int, step: int, scores: Mapping[int, float],
                        members: Sequence[PbtMember]) -> None:
        if interval != 1:
            return
        best, second, *rest = sorted(scores, key=lambda m: scores[m])
        folders = {m.index: Path(m.checkpoints.location) / f"step-{step:010d}" for m in members}
        shutil.rmtree(folders[best])
        self.broken[best] = "no valid checkpoint of step"
        weights = folders[second] / "tensors.safetensors"
        data = bytearray(weights.read_bytes())
        data[len(data) // 2] ^= 0xFF
        weights.write_bytes(bytes(data))
        self.broken[second] = "checksum mismatch"
        self.own = {m: checkpoint_model_hash(folders[m]) for m in rest}


@pytest.mark.slow
def test_a_donor_without_a_valid_checkpoint_is_not_exploited(project: Path) -> None:
    breaker = Breaker()
    with pytest.warns(CheckpointWarning, match="checksum mismatch"):  # the corrupted donor's
        result = run_pbt(project / "pipeline.yaml",
                         ["training.epochs=1", "training.batch_size=256",
                          tuning(population=4, interval=9, quantile=0.5)], listener=breaker)
    first = [r for r in result.lineage.exploits if r.interval == 1]
    assert len(first) == 2 and breaker.refused == first
    for record in first:
        assert not record.exploited and record.after == record.before
        assert record.reason is not None and breaker.broken[record.donor] in record.reason
        # the recipient kept training its own weights
        loaded, _ = breaker.loaded[(record.recipient, record.step)]
        assert loaded == breaker.own[record.recipient]
    assert not breaker.copies
    assert all(not math.isnan(score) for score in result.lineage.intervals[-1].scores.values())


@pytest.mark.parametrize(("override", "field_path"), [
    (tuning(population=1), "tuning.pbt.population"),
    (tuning(space="model.hidden: {type: choice, values: [[8], [16]]}"),
     "tuning.space.model.hidden"),
    (tuning(space="training.batch_size: {type: int, low: 64, high: 512}"),
     "tuning.space.training.batch_size"),
    (tuning(space="model.dropout: {type: uniform, low: 0.0, high: 0.5}"),
     "tuning.space.model.dropout"),
    (tuning(space="training.optimizer.momentum: {type: uniform, low: 0.1, high: 0.9}"),
     "tuning.space.training.optimizer.momentum"),
    ("tuning={objective: {metric: val_loss, direction: minimize}, "
     f"space: {{{LR}: {{type: uniform, low: 0.001, high: 0.01}}}}}}", "tuning.pbt"),
    (tuning().replace("metric: val_loss", "metric: test_roc_auc"), "tuning.objective.metric"),
])
def test_bad_pbt_specs_name_the_field_and_create_nothing(
    project: Path, override: str, field_path: str, tmp_path: Path
) -> None:
    settings = Settings.from_env({"TRAINFORGE_HOME": str(tmp_path)})
    with pytest.raises(SpecError) as caught:
        run_pbt(project / "pipeline.yaml", [*BASE, override], session=Session.open(settings))
    assert f"{field_path}:" in str(caught.value)
    assert str(project / "pipeline.yaml") in str(caught.value)
    assert not (tmp_path / "trainforge.db").exists()


def test_pbt_run_on_the_command_line_refuses_a_bad_spec(project: Path) -> None:
    shown = CliRunner().invoke(app, ["tune", str(project / "pipeline.yaml"),
                                     tuning(space="model.hidden: {type: choice, values: [[8]]}")])
    assert shown.exit_code == 2
    assert "tuning.space.model.hidden: cannot change mid-training" in shown.output



@pytest.mark.slow
def test_pbt_run_on_the_command_line(project: Path) -> None:
    shown = CliRunner().invoke(app, ["tune", str(project / "pipeline.yaml"), "--json",
                                     "training.epochs=1", "training.batch_size=256",
                                     tuning(population=2, interval=9, quantile=0.5)])
    assert shown.exit_code == 0, shown.output
    result = json.loads(shown.stdout)  # warnings go to stderr
    assert len(result["members"]) == 2
    assert [(e["interval"], e["step"]) for e in result["exploits"]] == [(1, 9)]
    store = open_store(Settings.from_env().database_url.get_secret_value())
    study = store.get_run(result["study_run"])
    assert study.status.value == "completed" and study.tags["pbt"]["best_run"] == \
        result["members"][0]["run"]


@dataclass
class SaveBlocker(Watcher):
    """Before the second interval, a file where each member's step-12 checkpoint folder would
    go, so every save at step 12 fails for real; notes the step each load starts from."""

    loads: list[tuple[int, int]] = field(default_factory=list)

    def on_member_loaded(self, member: PbtMember, step: int, trainer: Trainer) -> None:
        super().on_member_loaded(member, step, trainer)
        self.loads.append((member.index, step))
        if step == 6:
            (Path(member.checkpoints.location) / "step-0000000012").write_text("in the way")


@pytest.mark.slow
def test_a_donor_whose_save_failed_is_not_exploited(project: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    blocker = SaveBlocker()
    result = run_pbt(project / "pipeline.yaml",
                     ["training.epochs=1", "training.batch_size=256",
                      tuning(population=4, interval=6, quantile=0.5)], listener=blocker)
    second = [r for r in result.lineage.exploits if r.interval == 2]
    assert len(second) == 2
    for record in second:
        assert not record.exploited and record.after == record.before
        assert record.reason is not None
        assert "no valid checkpoint of step 12 (its newest is of step 6; saving it failed" \
            in record.reason
    # the third interval: every member went on from its own checkpoint of step 6
    assert [i.step for i in result.lineage.intervals] == [6, 12, 17]
    assert blocker.loads[-4:] == [(m, 6) for m in range(4)]
    assert sum("saving the checkpoint of step 12 failed" in r.message
               for r in caplog.records) == 4


def test_a_study_takes_its_data_steps_from_a_run_of_the_same_data(project: Path) -> None:
    """The population's dataset is prepared as the study's pipeline run, whose data steps a
    plain run of the spec computed already (the tuning section is not theirs to depend on)."""
    from home import home_store

    from trainforge.entities import StepState
    from trainforge.pipeline import run_pipeline

    ran = run_pipeline(project / "pipeline.yaml", [*BASE, "registry=null"])
    result = run_pbt(project / "pipeline.yaml", [*BASE, tuning(population=2, interval=17)])
    store = home_store()
    steps = {}
    for run in (ran.run, result.study):
        recorded = store.get_run(run.run_id).system["pipeline_run"]
        steps[run.run_id] = {a.step: a for a in store.list_step_runs(recorded)}
    plain, study = steps[ran.run.run_id], steps[result.study.run_id]
    assert sorted(study) == ["features", "ingest", "split", "validate"]
    for step, attempt in study.items():
        assert attempt.state is StepState.CACHED and attempt.cached_from == plain[step].step_run_id
    assert store.get_run(result.study.run_id).data_version_id == ran.run.data_version_id
