"""Learning-rate schedules: each curve's warmup then shape, checked value by value."""

import math

import pytest
from train_helpers import Recorder, make_trainer

from trainforge.config import ScheduleSpec
from trainforge.train import lr_factor


def curve(total: int, base: float = 1.0, **spec) -> list[float]:
    schedule = ScheduleSpec(**spec)
    return [lr_factor(schedule, step, total, base) for step in range(total)]


def test_constant_with_warmup_rises_linearly_then_stays():
    assert curve(8, name="constant", warmup_steps=4) == pytest.approx(
        [0.25, 0.5, 0.75, 1, 1, 1, 1, 1])


def test_step_decays_by_gamma_every_step_size_after_warmup():
    assert curve(10, name="step", warmup_steps=2, step_size=3, gamma=0.5) == pytest.approx(
        [0.5, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25])


def test_cosine_falls_from_the_peak_to_min_lr_on_the_last_step():
    values = curve(12, name="cosine", warmup_steps=2, min_lr=0.1)
    assert values[:2] == pytest.approx([0.5, 1.0])
    progress = [(s - 2) / 9 for s in range(2, 12)]
    expected = [0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)) for p in progress]
    assert values[2:] == pytest.approx(expected)
    assert values[-1] == pytest.approx(0.1)


def test_linear_falls_in_equal_steps_to_min_lr():
    values = curve(7, base=2.0, name="linear", warmup_steps=1, min_lr=0.5)  # floor 0.5 / 2
    assert values == pytest.approx([1.0, 1.0, 0.85, 0.7, 0.55, 0.4, 0.25])


def test_one_cycle_rises_from_lr_over_div_factor_then_anneals_to_min_lr():
    values = curve(10, name="one_cycle", div_factor=10.0, pct_start=0.3, min_lr=0.0)
    rise = [0.1 + 0.9 * 0.5 * (1 - math.cos(math.pi * s / 2)) for s in range(3)]
    fall = [0.5 * (1 + math.cos(math.pi * s / 6)) for s in range(7)]
    assert values == pytest.approx(rise + fall)
    assert max(values) == pytest.approx(1.0) and values[-1] == pytest.approx(0.0, abs=1e-12)


def test_one_cycle_uses_warmup_steps_for_its_rise_when_given():
    values = curve(10, name="one_cycle", warmup_steps=5, div_factor=4.0)
    assert values[0] == pytest.approx(0.25) and values[4] == pytest.approx(1.0)
    assert values[5] == pytest.approx(1.0) and values[-1] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("name", ["constant", "step", "cosine", "linear", "one_cycle"])
def test_the_trainer_applies_the_schedule_step_by_step(name):
    recorder = Recorder()
    make_trainer(optimizer={"lr": 0.01}, log_every_n_steps=1, recorder=recorder,
                 schedule={"name": name, "warmup_steps": 3, "step_size": 4, "min_lr": 0.001}).fit()
    spec = ScheduleSpec(name=name, warmup_steps=3, step_size=4, min_lr=0.001)
    expected = [0.01 * lr_factor(spec, step, 20, 0.01) for step in range(20)]
    assert recorder.values("lr") == pytest.approx(expected, rel=1e-12)
