"""`trainforge webhooks ...`: subscribe a URL to events, list subscriptions, deliver the
outbox (`deliver`, once or `--loop`), list its deliveries (`outbox`) and their attempts
(`deliveries`), and send one again (`redeliver`). A subscription names the environment variable
holding its signing secret (`--secret-env`); the secret itself is never stored or shown.
Exit codes: 1 a delivery that does not exist; 2 bad arguments, or a redeliver of a delivery
that is pending already."""

from __future__ import annotations

import os
import signal
import threading
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from trainforge.cli import _context, _render
from trainforge.entities import DeliveryState
from trainforge.errors import Conflict, NotFound
from trainforge.storage import all_items

if TYPE_CHECKING:
    from trainforge.entities import EventDelivery

Events = Annotated[list[str], typer.Option(
    "--events", help="An event to send (repeat for several): model.stage_changed, "
    "model.promotion_refused, data.validation_failed, data.drift_detected.")]
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
    """Delivery attempts, newest first: delivery, event, attempt, HTTP status, error."""
    store = _context.existing_store()
    attempts = store.list_deliveries(webhook_id, limit=limit).items
    rows = [{"when": d.created_at.isoformat(timespec="seconds"), "webhook": d.webhook_id,
             "event": d.event, "event_id": d.event_id, "attempt": d.attempt,
             "status": d.status_code, "delivered": d.delivered, "error": d.error,
             "delivery": d.event_delivery_id}
            for d in attempts]
    if as_json:
        _render.emit_json(rows)
        return
    columns = ["when", "delivery", "webhook", "event", "attempt", "status", "delivered",
               "error"]
    _render.emit_table("Webhook deliveries", columns, [[r[c] for c in columns] for r in rows],
                       empty="no deliveries")


def webhooks_deliver(
    loop: Annotated[bool, typer.Option(
        "--loop", help="Keep delivering until interrupted (Ctrl-C, SIGTERM).")] = False,
    as_json: _render.JsonFlag = False,
) -> None:
    """Send the outbox's deliveries that are due: one pass (each webhook's events in order),
    or passes until interrupted with --loop. Failed ones are retried by a later pass."""
    from trainforge.events import Deliverer

    deliverer = Deliverer(_context.existing_store(), os.environ)
    if loop:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            deliverer.run(stop)
        except KeyboardInterrupt:
            stop.set()
        return
    done = deliverer.run_once()
    fields = {"attempts": done.attempts, "delivered": done.delivered,
              "retrying": done.retrying, "dead": done.dead}
    if as_json:
        _render.emit_json(fields)
    else:
        _render.emit_fields("Webhook deliveries", list(fields.items()))


def webhooks_outbox(
    state: Annotated[Optional[DeliveryState], typer.Option(
        help="Only deliveries in this state.")] = None,
    webhook_id: Annotated[Optional[int], typer.Option(
        "--webhook", metavar="WEBHOOK_ID", help="Only this webhook's deliveries.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="The newest deliveries shown.")] = 50,
    as_json: _render.JsonFlag = False,
) -> None:
    """Each event's delivery to each webhook, newest first: state, attempts, next attempt."""
    store = _context.existing_store()
    rows = [_outbox_row(d) for d in store.list_event_deliveries(state, webhook_id,
                                                                limit=limit).items]
    if as_json:
        _render.emit_json(rows)
        return
    columns = ["delivery", "webhook", "event", "subject", "state", "attempts", "next_attempt",
               "last_error"]
    _render.emit_table("Webhook outbox", columns, [[r[c] for c in columns] for r in rows],
                       empty="no deliveries")


def webhooks_redeliver(
    delivery_id: Annotated[int, typer.Argument(
        metavar="DELIVERY", help="A delivery id (see: trainforge webhooks outbox).")],
    as_json: _render.JsonFlag = False,
) -> None:
    """Send delivery DELIVERY again: a dead one, or a delivered one on purpose. It is pending
    at once, with a new round of retries; a deliverer sends it in its webhook's order."""
    from datetime import datetime, timezone

    store = _context.existing_store()
    try:
        again = store.redeliver(delivery_id, datetime.now(timezone.utc))
    except NotFound as exc:
        _render.fail(str(exc), 1)
    except Conflict as exc:
        _render.fail(str(exc), 2)
    row = _outbox_row(again)
    if as_json:
        _render.emit_json(row)
    else:
        _render.emit_fields(f"Delivery {delivery_id} is pending again", list(row.items()))


def _outbox_row(delivery: EventDelivery) -> dict[str, Any]:
    pending = delivery.state is DeliveryState.PENDING
    return {"delivery": delivery.delivery_id, "webhook": delivery.webhook_id,
            "event": delivery.event.name, "event_id": delivery.event.event_id,
            "subject": delivery.event.subject, "state": delivery.state.value,
            "attempts": delivery.attempts,
            "next_attempt": delivery.next_attempt_at.isoformat(timespec="seconds")
            if pending else None,
            "last_error": delivery.last_error}
