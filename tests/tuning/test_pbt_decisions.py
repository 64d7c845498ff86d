"""The pure parts of PBT: who exploits whom, exploring values, putting them into a state."""

from __future__ import annotations

import math
import random

import pytest

from trainforge.config import ParamSpec, PbtSpec
from trainforge.tuning._pbt_select import plan_exploits, rank
from trainforge.tuning._pbt_space import explore, perturb, sample, with_values

LR = "training.optimizer.lr"


def test_rank_puts_nan_last_and_breaks_ties_by_index() -> None:
    scores = {0: 0.5, 1: math.nan, 2: 0.1, 3: 0.5}
    assert rank(scores, "minimize") == [2, 0, 3, 1]
    assert rank(scores, "maximize") == [0, 3, 2, 1]


def test_the_bottom_quantile_draws_donors_from_the_top() -> None:
    scores = {i: float(i) for i in range(8)}  # minimize: 0 is best
    pairs = plan_exploits(scores, quantile=0.25, direction="minimize", rng=random.Random(0))
    assert sorted(r for r, _ in pairs) == [6, 7]
    assert {d for _, d in pairs} <= {0, 1}
    pairs = plan_exploits({0: 1.0, 1: 2.0}, quantile=0.25, direction="maximize",
                          rng=random.Random(0))
    assert pairs == [(0, 1)]  # at least one, even when a quarter rounds to none


def test_explore_perturbs_within_the_range_or_resamples() -> None:
    space = {LR: ParamSpec(type="loguniform", low=1e-4, high=1e-1),
             "training.pos_weight": ParamSpec(type="choice", values=[1.0, 2.0, 4.0])}
    rng = random.Random(1)
    perturbed = explore({LR: 0.01, "training.pos_weight": 2.0}, space,
                        PbtSpec(perturb_factors=(0.5, 2.0), resample_probability=0), rng)
    assert perturbed[LR] in (pytest.approx(0.005), pytest.approx(0.02))
    assert perturbed["training.pos_weight"] in (1.0, 4.0)
    assert perturb(0.08, space[LR], 2.0, rng) == 0.1  # kept in the range
    drawn = [sample(space[LR], rng) for _ in range(200)]
    assert all(1e-4 <= v <= 1e-1 for v in drawn)
    resampled = explore({LR: 0.01, "training.pos_weight": 2.0}, space,
                        PbtSpec(resample_probability=1), random.Random(3))
    assert 1e-4 <= resampled[LR] <= 1e-1


def test_with_values_sets_every_group_and_the_schedule_base() -> None:
    state = {"optimizer": {"state": {}, "param_groups": [{"lr": 0.1, "weight_decay": 0.0},
                                                          {"lr": 0.1, "weight_decay": 0.0}]},
             "scheduler": {"steps": 7, "base_lrs": [0.1, 0.1], "last_lr": 0.1},
             "model": {}}
    changed = with_values(state, {LR: 0.02, "training.optimizer.weight_decay": 0.5,
                                  "training.pos_weight": 3.0})
    assert [g["lr"] for g in changed["optimizer"]["param_groups"]] == [0.02, 0.02]
    assert [g["weight_decay"] for g in changed["optimizer"]["param_groups"]] == [0.5, 0.5]
    assert changed["scheduler"] == {"steps": 7, "base_lrs": [0.02, 0.02], "last_lr": 0.1}
    assert state["optimizer"]["param_groups"][0]["lr"] == 0.1  # the input is left as it was


def test_the_pbt_names_are_exported() -> None:
    import importlib

    tuning = importlib.import_module("trainforge.tuning")
    names = {"ExploitRecord", "IntervalScores", "Lineage", "PbtListener", "PbtMember",
             "PbtMemberResult", "PbtResult", "read_lineage", "run_pbt"}
    assert names <= set(tuning.__all__)
    for name in names:
        module = importlib.import_module(tuning._EXPORTS[name])
        assert getattr(tuning, name) is getattr(module, name)


def test_the_lineage_is_strict_json_and_reads_back() -> None:
    from trainforge.tuning import ExploitRecord, IntervalScores, Lineage

    lineage = Lineage("val_loss", "minimize", 2,
                      [IntervalScores(1, 10, {0: 0.3, 1: math.nan}, {0: {LR: 0.1}, 1: {LR: 1.0}})],
                      [ExploitRecord(1, 10, 1, 0, exploited=True, donor_checkpoint_step=10,
                                     weights_sha256="ab", before={LR: 1.0}, after={LR: 0.05})])
    data = lineage.to_json()
    assert b"NaN" not in data and b'"1": null' in data
    back = Lineage.from_json(data)
    assert math.isnan(back.intervals[0].scores[1])
    assert back.exploits == lineage.exploits and back.exploits[0].changes() == {LR: (1.0, 0.05)}
