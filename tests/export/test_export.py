"""`export_model` on a trained fraud run: the ONNX fp32 variant passes parity on the golden
set, a variant that fails its check is recorded as rejected with its figures, the bundle
holds the feature pipeline, the input contract and the profile; the legacy exporter takes
over where the current one fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
import yaml
from torch import nn

from trainforge.errors import ArtifactError
from trainforge.export import (
    ScoreHead,
    export_model,
    export_onnx,
    export_onnx_legacy,
    read_export_report,
    read_golden_set,
)

TRAINFORGE = str(Path(sys.executable).with_name("trainforge"))


@pytest.fixture(scope="module")
def exported(trained):
    """fp32, TorchScript, and int8 held to an impossible budget (a metric gain of 1)."""
    run = trained.store.get_run(trained.run_id)
    return export_model(trained.artifacts, run, int8=True, torchscript=True, metric_budget=-1.0)


def _variant(report, name):
    return next(v for v in report.variants if v.name == name)


def test_onnx_fp32_passes_parity_on_the_golden_set(exported, trained):
    fp32 = _variant(exported, "onnx-fp32")
    assert fp32.accepted and fp32.reason is None and fp32.exporter == "dynamo"
    assert 0 <= fp32.max_abs_diff <= 1e-5
    assert fp32.size_bytes > 0 and fp32.latency_ms_p50 > 0
    assert exported.rows == len(trained.golden())


def test_a_variant_failing_its_check_is_rejected_with_its_figures(exported, trained):
    int8 = _variant(exported, "onnx-int8")
    assert not int8.accepted and int8.reason.startswith("metric drop")
    assert int8.metric_drop is not None and int8.latency_ms_p50 > 0 and int8.size_bytes > 0
    stored = read_export_report(trained.artifacts, trained.run_id)
    assert stored == exported and stored.accepted("onnx-int8") is None


def test_torchscript_is_exported_only_when_asked_and_matches(exported):
    torchscript = _variant(exported, "torchscript")
    assert torchscript.accepted and torchscript.max_abs_diff <= 1e-5
    assert torchscript.artifact == "export/model.torchscript.pt"


def test_the_report_and_bundle_are_stored_under_export(exported, trained):
    names = set(trained.artifacts.list_names(trained.run_id))
    assert {"export/model.onnx", "export/model.int8.onnx", "export/model.torchscript.pt",
            "export/features.json", "export/contract.yaml", "export/profile.json",
            "export/report.json"} <= names
    report = json.loads(trained.artifacts.get_bytes(trained.run_id, "export/report.json"))
    assert report["rows"] == exported.rows
    assert set(report["variants"][0]) >= {"name", "artifact", "accepted", "reason",
                                          "max_abs_diff", "metric_drop", "latency_ms_p50",
                                          "size_bytes"}
    features = trained.artifacts.get_bytes(trained.run_id, "export/features.json")
    assert features == trained.artifacts.get_bytes(trained.run_id, "features/pipeline.json")
    contract = yaml.safe_load(trained.artifacts.get_bytes(trained.run_id,
                                                          "export/contract.yaml"))
    assert contract["columns"]["amount"]["type"] == "float"
    profile = json.loads(trained.artifacts.get_bytes(trained.run_id, "export/profile.json"))
    golden = trained.golden()
    assert profile["columns"]["amount"] == {"min": golden["amount"].min(),
                                            "max": golden["amount"].max()}
    allowed = contract["columns"]["country"]["allowed"]
    assert set(profile["columns"]["country"]["categories"]) <= set(allowed)


def test_the_exported_onnx_scores_the_golden_set_as_the_torch_model(exported, trained):
    from trainforge.train import load_stored_model

    stored = load_stored_model(trained.artifacts, trained.run_id)
    golden = trained.golden()
    session = ort.InferenceSession(trained.artifacts.get_bytes(trained.run_id,
                                                               "export/model.onnx"))
    scores = session.run(None, {"features": stored.transform(golden)})[0]
    np.testing.assert_allclose(scores, stored.predict_scores(golden), rtol=0, atol=1e-5)


class Branchy(nn.Module):
    """Data-dependent control flow: torch.export (the current exporter) cannot trace it."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(4, 1), nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x) if x.sum() > 0 else self.b(x)


def test_the_legacy_exporter_takes_over_where_the_current_one_fails(tmp_path):
    head = ScoreHead(Branchy(), "binary").eval()
    example = torch.ones(3, 4)
    assert export_onnx(head, example, tmp_path / "branchy.onnx") == "legacy"
    session = ort.InferenceSession(str(tmp_path / "branchy.onnx"))
    batch = torch.rand(5, 4)
    expected = head(batch).detach().numpy()
    np.testing.assert_allclose(session.run(None, {"features": batch.numpy()})[0], expected,
                               atol=1e-6)


def test_the_legacy_exporter_keeps_a_dynamic_batch_axis(tmp_path):
    head = ScoreHead(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)),
                     "multiclass").eval()
    export_onnx_legacy(head, torch.rand(2, 6), tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    batch = torch.rand(17, 6)
    np.testing.assert_allclose(session.run(None, {"features": batch.numpy()})[0],
                               head(batch).detach().numpy(), atol=1e-6)


def test_a_run_without_a_golden_set_is_named(trained):
    with pytest.raises(ArtifactError, match=r"run no-such-run: no golden set "
                                            r"evaluation/test.parquet"):
        read_golden_set(trained.artifacts, "no-such-run")


@pytest.mark.slow
def test_the_export_command_prints_the_report_and_names_an_unknown_version(trained):
    env = {**os.environ, **trained.env}
    done = subprocess.run([TRAINFORGE, "export", "fraud_detector", trained.version.version,
                           "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["variants"][0]["name"] == "onnx-fp32"
    missing = subprocess.run([TRAINFORGE, "export", "fraud_detector", "99"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert missing.returncode == 1 and "99" in missing.stderr


def test_export_reads_the_contract_and_target_from_the_runs_system_entries(trained):
    """What export checks against is what the run recorded for itself: params the user
    logged over (here: none left) change nothing."""
    from dataclasses import replace

    run = trained.store.get_run(trained.run_id)
    assert run.system["data"] == {"contract": run.params["data"]["contract"],
                                  "target": "is_fraud"}
    report = export_model(trained.artifacts, replace(run, params={}))
    assert _variant(report, "onnx-fp32").accepted
    contract = yaml.safe_load(trained.artifacts.get_bytes(trained.run_id, "export/contract.yaml"))
    assert "amount" in contract["columns"]
    with pytest.raises(ArtifactError, match="the golden set has no target column None"):
        export_model(trained.artifacts, replace(run, system={}))
