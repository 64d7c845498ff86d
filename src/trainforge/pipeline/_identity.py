"""What a spec trains, as a hash: `spec_hash` (a run's recorded spec is read back with
`config.recorded_spec`).

`spec_hash` identifies what a spec trains: the resolved spec without the settings that cannot
change the result (how a run resumes, stops and reports, the study that may search around it,
what a submission may set and the gates a later promotion applies: `RESULT_NEUTRAL`) and
without credentials (never dumped). `resume: auto` continues an unfinished run with the same
hash, and a resume may make only changes that keep it.
"""

from __future__ import annotations

import hashlib
import json

from trainforge.config import PipelineSpec

# Dotted spec paths that change how a run resumes, stops or reports (or what a submission of
# it may set), never what it trains.
RESULT_NEUTRAL = (
    "training.checkpoint.resume",
    "training.checkpoint.preempt_on",
    "training.checkpoint.async_save",
    "training.progress",
    "training.log_every_n_steps",
    "training.val_every_n_steps",
    "data.profile",
    "data.snapshot",
    "data.name",
    "data.drift",
    "training.profiler",
    "tracking",
    "tuning",
    "submit",
    "registry.promotion",
)


def spec_hash(spec: PipelineSpec) -> str:
    """sha256 of the canonical JSON of what `spec` trains (see the module docstring)."""
    data = spec.model_dump(mode="json")
    for path in RESULT_NEUTRAL:
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node.get(key) or {}
        node.pop(last, None)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()

