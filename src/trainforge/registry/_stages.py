"""Which stage moves a model version may make: a pure rule over two stages.

    none ──► staging ──► canary ──► production ──► archived
                │  ▲        │  │                     │
                │  └────────┘  └──► archived         │
                └──────────► production               │
                └──────────► archived                 │
    archived ──► staging  (restore) ◄─────────────────┘

A version lands in `staging` when it is registered with its gates passing, in `none` when it
is registered without (it must pass them to reach staging). `canary` may step back to
`staging` (a canary that is withdrawn, not retired). Production and canary hold one version
each: promoting into them moves the holder to `archived`. Nothing moves to `none`, and a
version never "moves" to the stage it is in.
"""

from __future__ import annotations

from trainforge.entities import ModelStage
from trainforge.errors import PromotionError

_S = ModelStage
ALLOWED_MOVES: dict[ModelStage, tuple[ModelStage, ...]] = {
    _S.NONE: (_S.STAGING, _S.ARCHIVED),
    _S.STAGING: (_S.CANARY, _S.PRODUCTION, _S.ARCHIVED),
    _S.CANARY: (_S.PRODUCTION, _S.STAGING, _S.ARCHIVED),
    _S.PRODUCTION: (_S.ARCHIVED,),
    _S.ARCHIVED: (_S.STAGING,),
}
# Stages that hold at most one version of a model.
SINGLE_HOLDER_STAGES = (_S.PRODUCTION, _S.CANARY)


def check_move(model_name: str, version: str, current: ModelStage, to: ModelStage) -> None:
    """`PromotionError` naming both stages (and the allowed moves) unless current → to is
    one of `ALLOWED_MOVES`."""
    allowed = ALLOWED_MOVES[current]
    if to in allowed:
        return
    shown = ", ".join(stage.value for stage in allowed)
    raise PromotionError(f"model {model_name!r} version {version}: cannot move from "
                         f"{current.value} to {to.value} (from {current.value} it may move to "
                         f"{shown})")
