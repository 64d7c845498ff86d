"""Planning a pipeline: a spec file or object, overrides, checks, and the spec hash that
`resume: auto` matches runs by."""

from __future__ import annotations

import pytest
from fraud_fixtures import EXAMPLE

from trainforge.config import load_spec, recorded_spec
from trainforge.errors import SpecError
from trainforge.pipeline import plan_pipeline, spec_hash

SPEC = EXAMPLE / "pipeline.yaml"


def test_a_spec_object_plans_like_its_file():
    from_file = plan_pipeline(SPEC, ["training.epochs=2"])
    from_object = plan_pipeline(load_spec(SPEC), ["training.epochs=2"])
    assert from_object.spec == from_file.spec
    assert from_object.spec_hash == from_file.spec_hash
    assert from_object.source is None and from_file.source == SPEC
    assert from_object.source_record() == {"spec": {"path": None,
                                                     "overrides": ["training.epochs=2"]}}
    assert from_object.system_record().entries() == {
        "spec": {**from_object.source_record()["spec"], "redacted": []},
        "resolved_spec": from_file.spec.model_dump(mode="json"),
        "data": {"contract": from_file.spec.data.contract, "target": "is_fraud"}}
    assert from_file.system_record().entries()["spec"]["path"] == str(SPEC)


def test_overrides_on_a_spec_object_are_checked_and_named():
    with pytest.raises(SpecError, match=r"<PipelineSpec object>: training.epochs: .*> 0"):
        plan_pipeline(load_spec(SPEC), ["training.epochs=0"])
    with pytest.raises(SpecError, match=r"<PipelineSpec object>: evaluation.gates.0.metric"):
        plan_pipeline(load_spec(SPEC), ["evaluation.gates.0.metric=test_rocauc"])


def test_the_spec_hash_ignores_how_a_run_resumes_stops_and_reports():
    base = spec_hash(load_spec(SPEC))
    neutral = ["training.checkpoint.resume=auto", "training.progress=plain",
               "training.log_every_n_steps=7", "training.profiler=true",
               "tracking.tensorboard=true", "training.checkpoint.async_save=false"]
    assert spec_hash(load_spec(SPEC, neutral)) == base
    for changed in ["training.epochs=3", "training.optimizer.lr=0.01", "data.split.seed=1",
                    "model.hidden=[8]", "training.seed=1"]:
        assert spec_hash(load_spec(SPEC, [changed])) != base, changed


def test_credentials_change_neither_the_hash_nor_any_dump():
    secret = "planted-s3-secret"
    plan = plan_pipeline(SPEC, ["training.checkpoint.storage_options.secret=" + secret,
                                "training.checkpoint.storage_options.key=AKIDPLANTED"])
    assert plan.spec_hash == spec_hash(load_spec(SPEC))
    assert plan.spec.training.checkpoint.fsspec_options() == {"secret": secret,
                                                              "key": "AKIDPLANTED"}
    for text in (plan.spec.model_dump_json(), repr(plan.spec), str(plan.system_record())):
        assert secret not in text and "AKIDPLANTED" not in text
    assert plan.source_record()["spec"]["overrides"] == plan.system_record().spec.overrides == [
        "training.checkpoint.storage_options.secret=***",
        "training.checkpoint.storage_options.key=***"]
    assert plan.system_record().spec.redacted == [
        "training.checkpoint.storage_options.secret", "training.checkpoint.storage_options.key"]


def test_credentials_survive_overrides_on_a_spec_object():
    spec = load_spec(SPEC, ["training.checkpoint.storage_options.secret=s3cr3t"])
    plan = plan_pipeline(spec, ["training.epochs=1"])
    assert plan.spec.training.checkpoint.fsspec_options() == {"secret": "s3cr3t"}


def test_a_recorded_spec_is_read_with_todays_defaults():
    spec = load_spec(SPEC)
    recorded = spec.model_dump(mode="json")
    del recorded["features"]["include"]  # as a run recorded before that field existed
    del recorded["data"]["positive_label"]
    assert recorded_spec(recorded) == spec
    assert recorded_spec({"name": "no longer valid"}) is None
