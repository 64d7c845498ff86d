"""The users and API tokens area of the SQL store: `SqlAuthStore`, the `AuthStore` methods
that `SqlStore` mixes in (each its own transaction, through the store's `_read` and `_write`).

Rules beyond `AuthStore`'s:
- a user name, token id or secret hash that is empty or longer than its column (255, 64 and
  64 characters) raises `ValueError` on both backends (SQLite would store it, PostgreSQL
  refuse it), naming the name or id and giving only the hash's length; a role that is no
  `Role` raises `ValueError`;
- an insert is `INSERT ... ON CONFLICT DO NOTHING RETURNING`: of two racing writers of one
  name or token id, one gets the row and the other `Conflict`, with no transaction aborted;
- a revocation locks the token's row (`FOR UPDATE` on PostgreSQL; on SQLite the write
  transaction holds the database's write lock), so of racing revocations the first time wins;
  a touch is one UPDATE and the last one to commit wins;
- `list_tokens` of a user who does not exist is an empty page, not `NotFound`;
- the order by creation is a keyset on (created_at, token_id); on SQLite the time key is the
  text as stored (`sql_search.time_key`), so a cursor compares as ORDER BY sorts.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from trainforge.entities import ApiToken, Role, User
from trainforge.errors import Conflict, NotFound
from trainforge.storage.contracts import DEFAULT_LIMIT, Page
from trainforge.storage.cursors import Listing
from trainforge.storage.sql_base import SqlBase, get_row
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.sql_search import time_key
from trainforge.storage.tables import ApiTokenRow, UserRow, as_utc, utcnow

# The widths of `users.name`, `api_tokens.token_id` and `api_tokens.secret_hash`.
_NAME_WIDTH = 255
_TOKEN_ID_WIDTH = 64
_SECRET_HASH_WIDTH = 64
_BY_NAME = (OrderKey(UserRow.name, (str,)),)


class SqlAuthStore(SqlBase):
    """The `AuthStore` methods of `SqlStore`: users and their API tokens."""

    # users

    def add_user(self, name: str, role: Role) -> User:
        _check_width("user name", name, _NAME_WIDTH)
        values = {"name": name, "role": Role(role).value, "created_at": utcnow()}
        with self._write() as session:
            row = session.scalar(self._insert(UserRow).values(values)
                                 .on_conflict_do_nothing().returning(UserRow))
            if row is None:
                raise Conflict(f"user {name!r} already exists")
            return _user(row)

    def get_user(self, name: str) -> User:
        with self._read() as session:
            return _user(get_row(session, UserRow, name, "user"))

    def set_user_role(self, name: str, role: Role) -> User:
        with self._write() as session:
            row = get_row(session, UserRow, name, "user")
            row.role = role.value
            return _user(row)

    def list_users(self, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> Page[User]:
        """Users by name."""
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_users"), select(UserRow),
                                           _BY_NAME, limit, cursor)
            return Page(tuple(_user(row[0]) for row in rows), next_cursor)

    # tokens

    def add_token(self, token_id: str, user: str, role: Role, secret_hash: str,
                  description: str, expires_at: datetime | None) -> ApiToken:
        """Store a token of `user` with the hash of its secret (never the secret); it expires
        at `expires_at` (None: never)."""
        _check_width("token id", token_id, _TOKEN_ID_WIDTH)
        _check_width("secret hash", secret_hash, _SECRET_HASH_WIDTH, shown=False)
        values = {"token_id": token_id, "user": user, "role": Role(role).value,
                  "secret_hash": secret_hash, "description": description,
                  "created_at": utcnow(), "expires_at": expires_at}
        with self._write() as session:
            get_row(session, UserRow, user, "user")
            row = session.scalar(self._insert(ApiTokenRow).values(values)
                                 .on_conflict_do_nothing().returning(ApiTokenRow))
            if row is None:
                raise Conflict(f"token {token_id!r} already exists")
            return _token(row)

    def get_token(self, token_id: str) -> ApiToken:
        with self._read() as session:
            return _token(_get_token(session, token_id))

    def list_tokens(self, user: str | None = None, limit: int = DEFAULT_LIMIT,
                    cursor: str | None = None) -> Page[ApiToken]:
        """Tokens oldest first, then by id (of one user, when given)."""
        query = select(ApiTokenRow)
        if user is not None:
            query = query.where(ApiTokenRow.user == user)
        keys = (time_key(self._dialect, ApiTokenRow.created_at, descending=False),
                OrderKey(ApiTokenRow.token_id, (str,)))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_tokens", (user,)), query,
                                           keys, limit, cursor)
            return Page(tuple(_token(row[0]) for row in rows), next_cursor)

    def revoke_token(self, token_id: str, at: datetime) -> ApiToken:
        """Revoke the token at `at`; a token revoked already keeps its first time."""
        with self._write() as session:
            row = _get_token(session, token_id, lock=True)
            if row.revoked_at is None:
                row.revoked_at = as_utc(at)
            return _token(row)

    def touch_token(self, token_id: str, at: datetime) -> None:
        """Set the token's `last_used_at` to `at`."""
        statement = (update(ApiTokenRow).where(ApiTokenRow.token_id == token_id)
                     .values(last_used_at=as_utc(at)).returning(ApiTokenRow.token_id)
                     .execution_options(synchronize_session=False))
        with self._write() as session:
            if session.execute(statement).first() is None:
                raise NotFound(f"token {token_id!r} not found")


def _check_width(what: str, value: str, width: int, shown: bool = True) -> None:
    if not 0 < len(value) <= width:
        got = repr(value) if shown else f"{len(value)} characters"
        raise ValueError(f"a {what} must be 1 to {width} characters, got {got}")


def _get_token(session: Session, token_id: str, lock: bool = False) -> ApiTokenRow:
    return get_row(session, ApiTokenRow, token_id, "token", lock=lock)


def _user(row: UserRow) -> User:
    return User(name=row.name, role=Role(row.role), created_at=as_utc(row.created_at))


def _token(row: ApiTokenRow) -> ApiToken:
    return ApiToken(
        token_id=row.token_id, user=row.user, role=Role(row.role),
        secret_hash=row.secret_hash, description=row.description,
        created_at=as_utc(row.created_at), expires_at=_maybe_utc(row.expires_at),
        revoked_at=_maybe_utc(row.revoked_at), last_used_at=_maybe_utc(row.last_used_at))


def _maybe_utc(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)
