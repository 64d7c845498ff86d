"""Declaring steps: `@step` reads inputs, params and the context from the signature; a bad
declaration or pipeline file is refused naming the step (or file) and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainforge.errors import SpecError
from trainforge.orchestration import Pipeline, StepContext, step
from trainforge.orchestration.user_pipelines import load_pipeline


def scale(frame, ctx: StepContext, factor: float = 2.0):
    return frame


def test_the_signature_says_inputs_params_and_context() -> None:
    made = step(scale, outputs=["scaled"], inputs={"frame": "raw"}).to_step()
    assert (made.inputs, made.params, made.context, made.renames) == (
        ("raw",), {"factor": 2.0}, "ctx", {"raw": "frame"})
    assert made.arguments({"raw": 1}) == {"frame": 1, "factor": 2.0}


@pytest.mark.parametrize(("options", "message"), [
    ({"params": {"factr": 3}}, "step 'scale' (test_step_declarations:scale): params: "
                               "'factr' is not an argument with a default (params: "
                               "['factor'])"),
    ({"inputs": {"fram": "raw"}}, "inputs: 'fram' is not an argument without a default"),
    ({"data": ["frame"]}, "data: 'frame' is not a param"),
    ({"retries": 1, "retry_on": ["data"]}, "retry: retry_on: ['data']"),
    ({"retries": -2}, "retry: attempts: -1 (expected 1 or more)"),
    ({"timeout": -1}, "timeout_s: -1 (expected seconds > 0)"),
    ({"ttl": 0}, "cache_ttl_s: 0 (expected seconds > 0)"),
    ({"cache": "sometimes"}, "cache: 'sometimes' (Input should be a valid boolean"),
])
def test_a_bad_declaration_fails_where_it_is_written(options: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        step(scale, outputs=["scaled"], **options)


def test_variadic_arguments_are_refused() -> None:
    def loose(*rows):
        return rows

    with pytest.raises(SpecError, match=r"\*rows: a step takes named arguments only"):
        step(loose, outputs=["rows"])


def test_a_pipeline_refuses_two_producers_of_a_value() -> None:
    first = step(scale, outputs=["scaled"], inputs={"frame": "x"})
    with pytest.raises(SpecError, match="step 'again': outputs: 'scaled' is produced by step "
                       "'scale' too"):
        Pipeline([step(lambda: 1, outputs=["x"], name="source"), first,
                  first.using(name="again")], name="p")


@pytest.mark.parametrize(("text", "message"), [
    ("- just a list\n", "expected a mapping with name and steps"),
    ("name: p\nsteps: []\nschedule: daily\n", "unknown fields ['schedule']"),
    ("steps: []\n", "name: expected the pipeline's name"),
    ("name: p\nsteps: {a: 1}\n", "steps: expected a list of steps"),
    ("name: p\nsteps: []\nmax_parallel: 0\n", "max_parallel: 0 (expected a whole number >= 1)"),
    ("name: p\nsteps: []\nretries: two\n", "retries: 'two' (expected a whole number >= 0)"),
    ("name: p\nsteps: []\nbackoff: soon\n", "backoff: 'soon' (expected seconds >= 0)"),
    ("name: p\nsteps: []\ntimeout: 0\n", "timeout: 0 (expected seconds > 0)"),
    ("name: p\nsteps:\n  - {name: a, outputs: [x]}\n", "steps[0].uses: missing"),
    ("name: p\nsteps:\n  - {uses: 'test_step_declarations:scale', outputs: x}\n",
     "steps[0].outputs: expected a list of names"),
    ("name: [p\n", "is not valid YAML"),
])
def test_a_bad_pipeline_file_is_refused_naming_the_field(
        tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "steps.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as raised:
        load_pipeline(str(path))
    assert str(raised.value).startswith(str(path))
    assert message in str(raised.value)


@pytest.mark.parametrize(("target", "message"), [
    ("no_such_module_anywhere:pipeline", "does not import: ModuleNotFoundError"),
    ("test_step_declarations:nothing", "does not import: AttributeError"),
    ("test_step_declarations:scale_value", "is a float, expected a Pipeline or a Dag"),
    ("test_step_declarations:scale", "a function that needs arguments"),
    ("just-a-name", "expected a YAML file or 'package.module:attribute'"),
])
def test_a_bad_target_is_refused_naming_it(target: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_pipeline(target)


scale_value = 2.0
