"""API tokens: issued once, stored hashed, checked on every request of `trainforge server`.

A token reads `tf_<token id>_<secret>`: the id (12 hex characters) is public and names the
stored record; the secret (43 URL-safe characters, 256 random bits) is shown once, when the
token is issued, and the store keeps only its SHA-256 (a secret this random needs no slow hash:
there is nothing to guess). A token acts with its own role, capped by its user's role at the
time of the request (demoting a user demotes their tokens at once); it stops working at its
expiry or once revoked.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from trainforge.entities import ApiToken, Role
from trainforge.errors import NotFound, TrainforgeError
from trainforge.storage import AuthStore

PREFIX = "tf_"
_SHAPE = re.compile(r"^tf_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


class Unauthenticated(TrainforgeError):
    """A request's token is missing, malformed, unknown, wrong, expired or revoked (the message
    says which, for the server's log; the client is told only that it is not valid)."""


@dataclass(frozen=True)
class Caller:
    """Who a request acts as: the token's user, the role it acts with and the token's id."""

    user: str
    role: Role
    token_id: str


def issue_token(store: AuthStore, user: str, role: Role | None = None, *,
                expires_in: timedelta | None = None, description: str = "",
                now: datetime | None = None) -> tuple[str, ApiToken]:
    """A new token of `user` (`NotFound` naming them), acting as `role` (default: the user's
    own; `ValueError` when it is above it), expiring `expires_in` from now (None: never).
    Returns the token itself, which is never shown again, and its stored record."""
    owner = store.get_user(user)
    role = role or owner.role
    if not owner.role.allows(role):
        raise ValueError(f"user {user!r} is {owner.role.value}: a token of theirs cannot be "
                         f"{role.value}")
    if expires_in is not None and expires_in <= timedelta(0):
        raise ValueError(f"a token's lifetime must be positive, got {expires_in}")
    now = now or datetime.now(timezone.utc)
    token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    record = store.add_token(token_id, user, role, _hash(secret), description,
                             now + expires_in if expires_in is not None else None)
    return f"{PREFIX}{token_id}_{secret}", record


def authenticate(store: AuthStore, presented: str, now: datetime | None = None) -> Caller:
    """The caller a presented token acts as; `Unauthenticated` saying why it does not."""
    shape = _SHAPE.match(presented)
    if shape is None:
        raise Unauthenticated("the token is not of the form tf_<id>_<secret>")
    token_id, secret = shape.groups()
    try:
        token = store.get_token(token_id)
    except NotFound:
        raise Unauthenticated(f"no token {token_id}") from None
    if not hmac.compare_digest(token.secret_hash, _hash(secret)):
        raise Unauthenticated(f"token {token_id}: wrong secret")
    now = now or datetime.now(timezone.utc)
    if token.revoked_at is not None:
        raise Unauthenticated(f"token {token_id} was revoked")
    if token.expires_at is not None and token.expires_at <= now:
        raise Unauthenticated(f"token {token_id} expired")
    owner = store.get_user(token.user)
    role = token.role if owner.role.allows(token.role) else owner.role
    return Caller(token.user, role, token_id)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
