"""The protocol of the server's users and API tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from trainforge.entities import ApiToken, Role, User
from trainforge.storage.contracts._pages import DEFAULT_LIMIT, Page


class AuthStore(Protocol):
    """Users and their API tokens: what `trainforge server` checks every request against.

    - `add_user` stores a user (`Conflict` naming the name when it is taken); `get_user`
      raises `NotFound` naming it; `set_user_role` changes a user's role (their tokens then
      act at most with it) and raises `NotFound` naming an unknown user; `list_users` orders
      by name (cursor: the name);
    - `add_token` stores a token of an existing user (`NotFound` naming the user, `Conflict`
      naming the token id when it is taken). The store is given the secret's hash, never the
      secret; it does not judge the role against the user's (`trainforge.server` does);
    - `get_token` raises `NotFound` naming the token id; `list_tokens` orders by creation,
      oldest first, of one user when given (cursor: the creation time and id);
    - `revoke_token` sets `revoked_at` to `at` unless it was revoked already (then it keeps
      the first time) and returns the token; `NotFound` naming the token id;
    - `touch_token` sets `last_used_at` to `at` (`NotFound` naming the token id);
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def add_user(self, name: str, role: Role) -> User: ...

    def get_user(self, name: str) -> User: ...

    def set_user_role(self, name: str, role: Role) -> User: ...

    def list_users(self, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> Page[User]: ...

    def add_token(self, token_id: str, user: str, role: Role, secret_hash: str,
                  description: str, expires_at: datetime | None) -> ApiToken: ...

    def get_token(self, token_id: str) -> ApiToken: ...

    def list_tokens(self, user: str | None = None, limit: int = DEFAULT_LIMIT,
                    cursor: str | None = None) -> Page[ApiToken]: ...

    def revoke_token(self, token_id: str, at: datetime) -> ApiToken: ...

    def touch_token(self, token_id: str, at: datetime) -> None: ...
