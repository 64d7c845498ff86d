"""The warning category of checkpoint problems that are survived rather than raised."""

from __future__ import annotations


class CheckpointWarning(UserWarning):
    """A checkpoint was skipped (invalid, unfinished, corrupted) or restored only in part.

    The message names the checkpoint's location and the reason.
    """
