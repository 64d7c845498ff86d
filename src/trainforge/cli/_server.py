"""`trainforge server` (the team server's REST API), `trainforge users ...` and `trainforge
tokens ...`: the users the server knows and their API tokens. There is no default user or
password: the first admin is added here, by someone with the database, and every later one by
an admin. A token is printed once, when created; only its hash is stored.
Exit codes: 1 a user or token that does not exist; 2 bad arguments (a name taken, a role
above the user's, a lifetime that is not positive)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from typing import Annotated, Optional

import typer

from trainforge.cli import _context, _extras, _render
from trainforge.entities import Role
from trainforge.errors import Conflict, NotFound
from trainforge.storage import all_items

RoleOption = Annotated[Role, typer.Option(help="viewer reads; editor also writes runs and "
                                               "moves model stages; admin also manages users.")]


def server(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Server processes.")] = 1,
) -> None:
    """Serve the REST API (/api/v1/...) over this database, every route but /health behind an
    API token (see `trainforge tokens create`)."""
    _extras.require_extra("trainforge server", "server")
    import uvicorn

    from trainforge.server import create_server_app

    session = _context.session()
    if not session.store.list_users(limit=1).items:
        typer.echo("warning: no users yet, so no request but /health can succeed: add one "
                   "with `trainforge users add NAME --role admin`, then `trainforge tokens "
                   "create NAME`", err=True)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if workers == 1:
        uvicorn.run(create_server_app(session), host=host, port=port, log_level="warning")
        return
    uvicorn.run("trainforge.server:app_from_environment", factory=True, host=host, port=port,
                workers=workers, log_level="warning")


def users_add(name: str, role: RoleOption = Role.VIEWER) -> None:
    """Add user NAME with ROLE."""
    try:
        user = _context.store().add_user(name, role)
    except Conflict as exc:
        _render.fail(str(exc), 2)
    typer.echo(f"user {user.name} ({user.role.value})")


def users_set_role(name: str, role: RoleOption) -> None:
    """Give user NAME another ROLE: their tokens act at most with it from the next request."""
    try:
        user = _context.store().set_user_role(name, role)
    except NotFound as exc:
        _render.fail(str(exc), 1)
    typer.echo(f"user {user.name} ({user.role.value})")


def users_list(as_json: _render.JsonFlag = False) -> None:
    """Every user, by name."""
    store = _context.existing_store()
    users = all_items(lambda cursor: store.list_users(cursor=cursor))
    rows = [{"name": u.name, "role": u.role.value,
             "created": u.created_at.isoformat(timespec="seconds")} for u in users]
    if as_json:
        _render.emit_json(rows)
        return
    _render.emit_table("Users", ["name", "role", "created"],
                       [list(row.values()) for row in rows], empty="no users")


def tokens_create(
    user: str,
    role: Annotated[Optional[Role], typer.Option(
        help="What the token may do, at most the user's role (default: the user's).")] = None,
    expires_in_days: Annotated[float, typer.Option(
        help="Days until it stops working.")] = 90.0,
    never_expires: Annotated[bool, typer.Option(
        "--never-expires", help="No expiry (a service token revoked by hand).")] = False,
    description: Annotated[str, typer.Option(help="What it is for: CI, a worker, ...")] = "",
) -> None:
    """A new API token of USER, printed once (store it now: only its hash is kept)."""
    from trainforge.server import issue_token

    lifetime = None if never_expires else timedelta(days=expires_in_days)
    try:
        token, record = issue_token(_context.store(), user, role, expires_in=lifetime,
                                    description=description)
    except NotFound as exc:
        _render.fail(str(exc), 1)
    except ValueError as exc:
        _render.fail(str(exc), 2)
    expires = record.expires_at.isoformat(timespec="seconds") if record.expires_at else "never"
    typer.echo(f"token {record.token_id} of {record.user} ({record.role.value}, expires "
               f"{expires}):", err=True)
    typer.echo(token)


def tokens_list(user: Annotated[Optional[str], typer.Option(help="Only this user's.")] = None,
                as_json: _render.JsonFlag = False) -> None:
    """API tokens, oldest first: never their secrets."""
    store = _context.existing_store()
    tokens = all_items(lambda cursor: store.list_tokens(user, cursor=cursor))

    def when(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat(timespec="seconds")

    rows = [{"token_id": t.token_id, "user": t.user, "role": t.role.value,
             "description": t.description, "created": when(t.created_at),
             "expires": when(t.expires_at), "revoked": when(t.revoked_at),
             "last_used": when(t.last_used_at)} for t in tokens]
    if as_json:
        _render.emit_json(rows)
        return
    columns = list(rows[0]) if rows else ["token_id"]
    _render.emit_table("Tokens", columns, [list(row.values()) for row in rows],
                       empty="no tokens")


def tokens_revoke(token_id: str) -> None:
    """Revoke token TOKEN_ID (the id `tokens list` shows): it stops working at once."""
    try:
        token = _context.store().revoke_token(token_id, datetime.now(timezone.utc))
    except NotFound as exc:
        _render.fail(str(exc), 1)
    assert token.revoked_at is not None
    typer.echo(f"token {token.token_id} of {token.user} revoked at "
               f"{token.revoked_at.isoformat(timespec='seconds')}")
