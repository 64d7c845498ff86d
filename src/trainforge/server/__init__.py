"""The team server (`trainforge server`): the REST API over the store, behind API tokens.

    create_server_app   the FastAPI app over a `Session` (every route's permission decided)
    app_from_environment  the same over the environment's settings (each `--workers` process)
    issue_token         a new token of a user, shown once and stored hashed
    authenticate        the `Caller` a presented token acts as, or `Unauthenticated`

Names are imported on first use (`trainforge._lazy`): the token functions come without FastAPI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.server._app import app_from_environment, create_server_app
    from trainforge.server._tokens import Caller, Unauthenticated, authenticate, issue_token

_EXPORTS = {
    "Caller": "trainforge.server._tokens",
    "Unauthenticated": "trainforge.server._tokens",
    "app_from_environment": "trainforge.server._app",
    "authenticate": "trainforge.server._tokens",
    "create_server_app": "trainforge.server._app",
    "issue_token": "trainforge.server._tokens",
}

__all__ = ["Caller", "Unauthenticated", "app_from_environment", "authenticate",
           "create_server_app", "issue_token"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
