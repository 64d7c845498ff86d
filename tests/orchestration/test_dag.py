import pytest

from trainforge.errors import TrainforgeError
from trainforge.orchestration import Dag, Step, StepEvent, run_dag


def double(x):
    return {"y": x * 2}


def add(x, y):
    return {"z": x + y}


def test_steps_run_in_dependency_order_whatever_the_declaration_order():
    dag = Dag("d", (Step("add", add, ("x", "y"), ("z",)), Step("double", double, ("x",), ("y",))),
              initial=("x",))
    assert [s.name for s in dag.order()] == ["double", "add"]
    assert run_dag(dag, {"x": 3}) == {"x": 3, "y": 6, "z": 9}


def test_listener_hears_each_step_start_and_finish():
    events: list[StepEvent] = []
    dag = Dag("d", (Step("double", double, ("x",), ("y",)),), initial=("x",))
    run_dag(dag, {"x": 1}, events.append)
    assert [(e.step, e.state) for e in events] == [("double", "started"), ("double", "finished")]


def test_failing_step_is_reported_then_raised():
    def boom(x):
        raise ValueError("bad")

    events: list[StepEvent] = []
    dag = Dag("d", (Step("boom", boom, ("x",), ("y",)),), initial=("x",))
    with pytest.raises(ValueError, match="bad"):
        run_dag(dag, {"x": 1}, events.append)
    assert events[-1].state == "failed"


def test_input_never_produced_is_rejected_at_definition():
    with pytest.raises(TrainforgeError, match=r"step 'add': inputs: 'w' is produced by no step"):
        Dag("d", (Step("add", add, ("x", "w"), ("z",)),), initial=("x",))


def test_cycle_is_rejected():
    with pytest.raises(TrainforgeError, match="steps a, b wait on each other"):
        Dag("d", (Step("a", add, ("z", "x"), ("y",)), Step("b", add, ("x", "y"), ("z",))),
            initial=("x",))


def test_output_produced_twice_is_rejected():
    with pytest.raises(TrainforgeError, match="step 'b': outputs: 'y' is produced by step 'a' too"):
        Dag("d", (Step("a", double, ("x",), ("y",)), Step("b", double, ("x",), ("y",))),
            initial=("x",))


def test_duplicate_step_names_are_rejected():
    with pytest.raises(TrainforgeError, match="duplicate step names"):
        Dag("d", (Step("a", double, ("x",), ("y",)), Step("a", add, ("x", "y"), ("z",))),
            initial=("x",))


def test_step_returning_other_outputs_than_declared_fails():
    dag = Dag("d", (Step("double", lambda x: {"q": 1}, ("x",), ("y", "z")),), initial=("x",))
    with pytest.raises(TrainforgeError, match="returned"):
        run_dag(dag, {"x": 1})


def test_missing_initial_value():
    dag = Dag("d", (Step("double", double, ("x",), ("y",)),), initial=("x",))
    with pytest.raises(TrainforgeError, match="missing initial values"):
        run_dag(dag, {})


def test_describe_is_the_wiring_as_data():
    dag = Dag("d", (Step("double", double, ("x",), ("y",)),), initial=("x",))
    assert dag.describe() == {
        "name": "d", "initial": ["x"],
        "steps": [{"name": "double", "inputs": ["x"], "outputs": ["y"]}],
    }
