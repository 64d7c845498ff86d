"""The one resolver of paths a request names (an artifact's name), before anything touches
storage.

A name arrives percent-decoded once, by the HTTP server. It is accepted only as a relative
POSIX path whose segments are made of letters, digits and `_ - + = @ .`, none empty and none
starting with a dot (so no `.` or `..`), at most `MAX_DEPTH` segments and `MAX_LENGTH`
characters; so a `%` left over (a double encoding such as `%252e`), a backslash, a NUL or
other control character, `;` parameters, `#`, `?`, a scheme or drive (`file:`, `C:`) and an
absolute path are all refused, whatever they would have meant. The artifact store checks the
key again on its own (`storage.objects.check_key`).
"""

from __future__ import annotations

import re

MAX_LENGTH = 1024
MAX_DEPTH = 32
_SEGMENT = re.compile(r"[A-Za-z0-9_\-+=@][A-Za-z0-9_\-+=@.]*")


class BadPath(ValueError):
    """A path a request named is not one the server accepts (the message says why)."""


def artifact_name(raw: str) -> str:
    """`raw` as an artifact name relative to its run's folder, or `BadPath`."""
    if not raw:
        raise BadPath("an artifact name is needed")
    if len(raw) > MAX_LENGTH:
        raise BadPath(f"an artifact name is at most {MAX_LENGTH} characters")
    segments = raw.split("/")
    if len(segments) > MAX_DEPTH:
        raise BadPath(f"an artifact name has at most {MAX_DEPTH} segments")
    for segment in segments:
        if not _SEGMENT.fullmatch(segment):
            raise BadPath(f"artifact name {raw!r}: segment {segment!r} is not a plain name "
                          "(letters, digits, _ - + = @ and dots, not first)")
    return raw
