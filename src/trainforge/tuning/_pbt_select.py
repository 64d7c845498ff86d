"""Which members exploit which: a pure decision over an interval's scores."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Literal


def rank(scores: Mapping[int, float],
         direction: Literal["minimize", "maximize"]) -> list[int]:
    """PbtMember indices best first; a score that is not a number ranks last; ties go to the
    lower index."""
    sign = 1.0 if direction == "minimize" else -1.0

    def key(member: int) -> tuple[bool, float, int]:
        score = scores[member]
        return (math.isnan(score), sign * score if not math.isnan(score) else 0.0, member)

    return sorted(scores, key=key)


def plan_exploits(scores: Mapping[int, float], *, quantile: float,
                  direction: Literal["minimize", "maximize"],
                  rng: random.Random) -> list[tuple[int, int]]:
    """(recipient, donor) pairs: each of the bottom `quantile` of members (at least one)
    draws a donor from the top `quantile`, in ranking order, worst recipient first."""
    ranked = rank(scores, direction)
    count = max(1, int(len(ranked) * quantile))
    top, bottom = ranked[:count], ranked[-count:]
    return [(recipient, rng.choice(top)) for recipient in reversed(bottom)]
