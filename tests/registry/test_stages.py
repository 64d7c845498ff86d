"""Stage moves: every pair of stages is allowed or refused, and a refusal names both."""

from __future__ import annotations

import itertools

import pytest

from trainforge.entities import ModelStage as S
from trainforge.errors import PromotionError
from trainforge.registry import ALLOWED_MOVES, check_move

ALLOWED = {
    (S.NONE, S.STAGING), (S.NONE, S.ARCHIVED),
    (S.STAGING, S.CANARY), (S.STAGING, S.PRODUCTION), (S.STAGING, S.ARCHIVED),
    (S.CANARY, S.PRODUCTION), (S.CANARY, S.STAGING), (S.CANARY, S.ARCHIVED),
    (S.PRODUCTION, S.ARCHIVED),
    (S.ARCHIVED, S.STAGING),
}
PAIRS = list(itertools.product(S, S))


def test_the_table_lists_exactly_the_documented_moves() -> None:
    assert {(a, b) for a, targets in ALLOWED_MOVES.items() for b in targets} == ALLOWED


@pytest.mark.parametrize(("current", "to"), sorted(ALLOWED))
def test_an_allowed_move_passes(current: S, to: S) -> None:
    check_move("m", "1", current, to)


@pytest.mark.parametrize(("current", "to"), [pair for pair in PAIRS if pair not in ALLOWED])
def test_a_refused_move_names_from_and_to(current: S, to: S) -> None:
    with pytest.raises(PromotionError) as raised:
        check_move("m", "1", current, to)
    assert f"cannot move from {current.value} to {to.value}" in str(raised.value)
    assert "model 'm' version 1" in str(raised.value)
