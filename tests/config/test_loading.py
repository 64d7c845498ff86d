from pathlib import Path

import pytest

from trainforge.config import PipelineSpec, load_spec
from trainforge.errors import SpecError

VALID = """
name: demo
data: {source: data/*.parquet, target: y, contract: contract.yaml}
features:
  transforms:
    - {type: standardize, columns: [a]}
model: {task: binary}
training: {epochs: 2, optimizer: {lr: 0.01}}
evaluation: {gates: [{metric: test_roc_auc, min: 0.5}]}
registry: {model_name: m}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return path


def problems(path: Path, overrides: list[str] | None = None) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_spec(path, overrides)
    return info.value.problems


def test_valid_spec_loads_with_paths_relative_to_the_spec_file(tmp_path):
    spec = load_spec(write(tmp_path, VALID))
    assert isinstance(spec, PipelineSpec)
    assert spec.data.source == str(tmp_path / "data/*.parquet")
    assert spec.data.contract == str(tmp_path / "contract.yaml")
    assert spec.training.optimizer.lr == 0.01
    assert spec.experiment_name == "demo"


def test_overrides_set_nested_fields_parsed_as_yaml(tmp_path):
    overrides = ["training.optimizer.lr=1e-3", "training.epochs=7", "model.hidden=[8, 4]",
                 "features.transforms.0.columns=[b]"]
    spec = load_spec(write(tmp_path, VALID), overrides)
    assert spec.training.optimizer.lr == 1e-3
    assert spec.training.epochs == 7
    assert spec.model.hidden == [8, 4]
    assert spec.features.transforms[0].columns == ["b"]


def test_wrong_type_names_file_field_and_expectation(tmp_path):
    path = write(tmp_path, VALID.replace("lr: 0.01", "lr: fast"))
    assert problems(path) == [
        f"{path}: training.optimizer.lr: expected a number > 0, got the text 'fast'"
    ]


def test_unknown_key_suggests_the_closest_known_key(tmp_path):
    path = write(tmp_path, VALID.replace("epochs: 2", "epocs: 2"))
    assert problems(path) == [f"{path}: training.epocs: unknown key; did you mean 'epochs'?"]


def test_unknown_key_by_override_is_reported_too(tmp_path):
    path = write(tmp_path, VALID)
    assert problems(path, ["training.optimizer.lrr=3"]) == [
        f"{path}: training.optimizer.lrr: unknown key; did you mean 'lr'?"
    ]


def test_unknown_transform_type_suggests_the_closest(tmp_path):
    path = write(tmp_path, VALID.replace("type: standardize", "type: standardise"))
    [message] = problems(path)
    assert message.startswith(f"{path}: features.transforms.0.type: expected one of")
    assert message.endswith("got the text 'standardise'; did you mean 'standardize'?")


def test_missing_required_field(tmp_path):
    path = write(tmp_path, VALID.replace("target: y, ", ""))
    assert problems(path) == [f"{path}: data.target: required field is missing"]


def test_every_problem_is_reported_at_once(tmp_path):
    text = VALID.replace("epochs: 2", "epochs: -1").replace("task: binary", "task: ranking")
    found = problems(write(tmp_path, text))
    assert len(found) == 2
    assert any("training.epochs: expected an integer > 0, got -1" in p for p in found)
    assert any("model.task: expected one of 'binary', 'multiclass' or 'regression'" in p
               for p in found)


def test_cross_field_rule_is_reported_with_its_section(tmp_path):
    path = write(tmp_path, VALID.replace("contract: contract.yaml}",
                                         "contract: contract.yaml, split: {method: time}}"))
    assert problems(path) == [f"{path}: data.split: method 'time' needs time_column"]


def test_malformed_yaml_names_line_and_column(tmp_path):
    path = write(tmp_path, "name: x\ndata: {source: [unclosed\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:3:1: malformed YAML")


def test_top_level_must_be_a_mapping(tmp_path):
    path = write(tmp_path, "- a\n- b\n")
    assert problems(path) == [f"{path}: expected a mapping of keys at the top level, got a list"]


def test_missing_file(tmp_path):
    assert problems(tmp_path / "nope.yaml") == [f"{tmp_path / 'nope.yaml'}: file not found"]


def test_malformed_override(tmp_path):
    path = write(tmp_path, VALID)
    [message] = problems(path, ["training.epochs"])
    assert "override 'training.epochs': expected KEY.PATH=VALUE" in message


def test_choice_words_yaml_reads_as_booleans_keep_their_meaning(tmp_path):
    path = write(tmp_path, VALID.replace("training: {epochs: 2,",
                                         "training: {progress: off, epochs: 2,"))
    assert load_spec(path).training.progress == "off"
    assert load_spec(write(tmp_path, VALID), ["training.progress=off"]).training.progress == "off"
    assert load_spec(write(tmp_path, VALID), ["training.progress=OFF"]).training.progress == "off"


def test_a_boolean_word_that_is_no_choice_of_the_field_is_still_refused(tmp_path):
    path = write(tmp_path, VALID.replace("training: {epochs: 2,",
                                         "training: {progress: on, epochs: 2,"))
    [problem] = problems(path)
    assert "training.progress" in problem and "'off'" in problem


def test_a_data_name_snapshots_cannot_be_numbered_under_is_refused(tmp_path):
    [problem] = problems(write(tmp_path, VALID), ["data.name=daily feed"])
    assert problem.startswith(f"{tmp_path / 'pipeline.yaml'}: data.name: ")
    assert "daily feed" in problem
