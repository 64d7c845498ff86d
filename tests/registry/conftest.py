"""Two fraud models trained once per session, in a home of their own: version 1 (two epochs)
and version 2 (one epoch, another seed: it scores lower on the same test split). Their spec
gates test_roc_auc >= `MIN_AUC` and declares a promotion gate: `max_drop` of test_roc_auc
against production. They record no slices. Each test gets a copy of that home
(`registry_home`), as TRAINFORGE_HOME. Bob ran the pipelines; Ann promotes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from fraud_fixtures import EXAMPLE
from registry_versions import MAX_DROP, MIN_AUC, V1, V2

from trainforge.config import Settings
from trainforge.session import Session


@pytest.fixture(scope="session")
def trained_registry(tmp_path_factory: pytest.TempPathFactory, fraud_slice: Path) -> Path:
    from trainforge.pipeline import run_pipeline

    root = tmp_path_factory.mktemp("trained_registry")
    project = root / "project"
    project.mkdir()
    shutil.copy(EXAMPLE / "contract.yaml", project / "contract.yaml")
    shutil.copytree(fraud_slice, project / "data")
    spec = yaml.safe_load((EXAMPLE / "pipeline.yaml").read_text())
    spec["evaluation"]["gates"] = [{"metric": "test_roc_auc", "min": MIN_AUC}]
    spec["registry"]["promotion"] = {"max_drop": [{"metric": "test_roc_auc", "max": MAX_DROP}]}
    (project / "pipeline.yaml").write_text(yaml.safe_dump(spec))
    settings = Settings.from_env({"TRAINFORGE_HOME": str(root / "home"),
                                  "TRAINFORGE_USER": "bob"})  # who ran the pipelines
    for overrides in (V1, V2):
        result = run_pipeline(project / "pipeline.yaml", overrides,
                              session=Session.open(settings))
        assert result.model_version is not None, "both versions pass the registration gate"
    return root


@pytest.fixture
def registry_home(trained_registry: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the trained home (database and artifacts) and its project, for one test."""
    shutil.copytree(trained_registry, tmp_path / "copy")
    monkeypatch.setenv("TRAINFORGE_HOME", str(tmp_path / "copy" / "home"))
    monkeypatch.setenv("TRAINFORGE_USER", "ann")
    return tmp_path / "copy"
