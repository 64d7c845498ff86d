"""`trainforge webhooks ...`: subscribe a URL to events, list subscriptions and the log of
delivery attempts. A subscription names the environment variable holding its signing secret
(`--secret-env`); the secret itself is never stored or shown."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.storage import all_items

Events = Annotated[list[str], typer.Option(
    "--events", help="An event to send (repeat for several): model.stage_changed, "
    "model.promotion_refused.")]
SecretEnv = Annotated[str, typer.Option(
    "--secret-env", metavar="NAME", help="The environment variable holding the signing secret "
    "(read when a delivery is made, by the process making it).")]


def webhooks_add(url: str, events: Events, secret_env: SecretEnv,
                 as_json: _render.JsonFlag = False) -> None:
    """POST the events named to URL, signed with HMAC-SHA256 (X-Trainforge-Signature)."""
    from trainforge.events import subscribe

    store = _context.store()
    try:
        hook = subscribe(store, url, events, secret_env)
    except ValueError as exc:
        _render.fail(str(exc), 2)
    if not os.environ.get(secret_env):
        typer.echo(f"warning: {secret_env} is not set here; deliveries made without it are "
                   "logged as not sent", err=True)
    fields = {"id": hook.webhook_id, "url": hook.url, "events": list(hook.events),
              "secret_env": hook.secret_env}
    if as_json:
        _render.emit_json(fields)
    else:
        _render.emit_fields(f"Webhook {hook.webhook_id}", list(fields.items()))


def webhooks_list(as_json: _render.JsonFlag = False) -> None:
    """Every webhook subscription."""
    store = _context.existing_store()
    hooks = all_items(lambda cursor: store.list_webhooks(cursor=cursor))
    rows = [{"id": h.webhook_id, "url": h.url, "events": ", ".join(h.events),
             "secret_env": h.secret_env, "created": h.created_at.isoformat(timespec="seconds")}
            for h in hooks]
    if as_json:
        _render.emit_json(rows)
        return
    columns = ["id", "url", "events", "secret_env", "created"]
    _render.emit_table("Webhooks", columns, [[r[c] for c in columns] for r in rows],
                       empty="no webhooks")


def webhooks_deliveries(
    webhook_id: Annotated[Optional[int], typer.Argument(
        metavar="[WEBHOOK_ID]", help="Only this webhook's attempts.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="The newest attempts shown.")] = 50,
    as_json: _render.JsonFlag = False,
) -> None:
    """Delivery attempts, newest first: event, attempt, HTTP status, error."""
    store = _context.existing_store()
    attempts = store.list_deliveries(webhook_id, limit=limit).items
    rows = [{"when": d.created_at.isoformat(timespec="seconds"), "webhook": d.webhook_id,
             "event": d.event, "event_id": d.event_id, "attempt": d.attempt,
             "status": d.status_code, "delivered": d.delivered, "error": d.error}
            for d in attempts]
    if as_json:
        _render.emit_json(rows)
        return
    columns = ["when", "webhook", "event", "attempt", "status", "delivered", "error"]
    _render.emit_table("Webhook deliveries", columns, [[r[c] for c in columns] for r in rows],
                       empty="no deliveries")
