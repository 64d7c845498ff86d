"""The store's wire protocol: how `RestStore` calls a `Store` method on `trainforge server`.

    POST /api/v1/store/<method>    body: the call's arguments by name, as JSON
                                   200: {"value": the method's result} as JSON
                                   4xx/5xx: {"detail", "error", "fields"} (`encode_error`)

Rules:
- `WIRE_METHODS` names every method that travels, with the role a token needs to call it:
  every method of `Store` except the users and tokens (`AuthStore`: token hashes never leave
  the server, and people are managed on the server's machine) and `close`. A store method
  added without an entry here fails `tests/storage/test_wire.py`;
- arguments and results are encoded from the protocol's own annotations (pydantic), so the
  records a client gets back are the same frozen `trainforge.entities` the SQL store hands
  out: NaN and infinities travel as JSON's `NaN` / `Infinity` constants (both ends are
  trainforge), bytes as base64, datetimes as ISO 8601 with their zone;
- an error the store raised on purpose (`TrainforgeError`, `ValueError`) travels by its class
  name, message and attributes, and is raised again on the client as the same class
  (`decode_error`), so a caller cannot tell a `RestStore` from a `SqlStore` by its errors;
- the codecs are built on first use of a method (pydantic schemas cost milliseconds each).
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from trainforge import errors
from trainforge.entities import Role
from trainforge.storage.contracts import Store

_WIRE_CONFIG = ConfigDict(ser_json_inf_nan="constants", ser_json_bytes="base64",
                          val_json_bytes="base64", arbitrary_types_allowed=False)
_ADMIN = ("add_webhook", "list_webhooks", "record_delivery", "list_deliveries",
          "delivery_heads", "claim_delivery", "finish_delivery", "redeliver",
          "get_event_delivery", "list_event_deliveries")
_EDITOR = (
    # experiments and runs
    "get_or_create_experiment", "get_experiment", "list_experiments", "upsert_pipeline",
    "register_pipeline", "get_pipeline", "list_pipelines",
    "create_run", "get_run", "find_run", "list_runs", "search_runs", "log_params", "set_tags",
    "set_system", "set_data_version", "end_run", "reopen_run", "heartbeat", "mark_crashed",
    # metrics and checkpoints
    "log_metrics", "set_summary_metrics", "get_metric_history", "metric_keys",
    "delete_metrics_after", "record_checkpoint", "mark_checkpoint_deleted", "list_checkpoints",
    # data versions
    "put_data_version", "get_data_version", "list_data_versions", "data_version_ids",
    "set_data_tag", "put_data_profile", "get_data_profiles", "number_data_version",
    "get_data_tag", "list_data_tags",
    # registry and the events runs announce
    "create_model_version", "get_model_version", "get_model_version_by_label",
    "list_model_versions", "change_stage", "record_refusal", "get_stage_holder",
    "list_stage_changes", "set_alias", "get_alias", "list_aliases", "add_event",
    "set_tags_and_announce",
    # pipeline runs
    "create_pipeline_run", "get_pipeline_run", "find_pipeline_run", "list_pipeline_runs",
    "set_pipeline_run_status", "add_step_run", "update_step_run", "list_step_runs",
    "find_cached", "previous_step_run", "list_step_outputs",
)
# The store's records hold what its runs' processes read back (the system namespace, the
# environment): the protocol is for trainforge's own clients (service tokens of training
# machines, editors), while people and pages read the API's own schemas.
WIRE_METHODS: dict[str, Role] = {**{name: Role.EDITOR for name in _EDITOR},
                                 **{name: Role.ADMIN for name in _ADMIN}}
_STATUS = ((errors.StoreUnavailable, 503), (errors.NotFound, 404), (errors.Conflict, 409),
           (errors.Ambiguous, 409), (errors.QueryError, 400), (ValueError, 400),
           (errors.TrainforgeError, 422))


class MethodCodec:
    """The encodings of one store method's arguments and result."""

    def __init__(self, name: str) -> None:
        if name not in WIRE_METHODS:
            raise ValueError(f"{name!r} is not a store method the wire protocol carries")
        function = getattr(Store, name)
        hints = typing.get_type_hints(function)
        result: Any = hints.pop("return")
        self.name = name
        self.signature = inspect.signature(function)
        fields: dict[str, Any] = {}
        for parameter in list(self.signature.parameters.values())[1:]:
            default = (... if parameter.default is inspect.Parameter.empty
                       else parameter.default)
            fields[parameter.name] = (hints[parameter.name], default)
        self._arguments: type[BaseModel] = create_model(
            f"{name}_arguments", __config__=ConfigDict(extra="forbid", **_WIRE_CONFIG),
            **fields)
        self._result: type[BaseModel] = create_model(
            f"{name}_result", __config__=_WIRE_CONFIG, value=(result, ...))

    def encode_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
        """The JSON body of a call with these arguments (as the protocol's method takes
        them); `TypeError` for arguments the method does not take."""
        bound = self.signature.bind(None, *args, **kwargs)
        given = {name: value for name, value in bound.arguments.items() if name != "self"}
        return self._arguments.model_validate(given).model_dump_json().encode()

    def decode_call(self, body: bytes) -> dict[str, Any]:
        """The keyword arguments of a call's JSON body; `ValueError` naming each argument
        that is missing, unknown or of the wrong type."""
        try:
            arguments = self._arguments.model_validate_json(body or b"{}")
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                                 for e in exc.errors())
            raise ValueError(f"store method {self.name}: {problems}") from None
        return {name: getattr(arguments, name) for name in type(arguments).model_fields}

    def encode_result(self, value: Any) -> bytes:
        """`{"value": ...}`: the result as JSON."""
        return self._result.model_construct(value=value).model_dump_json().encode()

    def decode_result(self, body: bytes) -> Any:
        return self._result.model_validate_json(body).value  # type: ignore[attr-defined]


@functools.cache
def codec(name: str) -> MethodCodec:
    """The codec of store method `name`, built once per process."""
    return MethodCodec(name)


def encode_error(exc: BaseException) -> tuple[int, bytes] | None:
    """The status and body that carry `exc` to the client, or None when it is not an error
    the store raises on purpose (the server then answers 500 and logs it)."""
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            fields = {key: value for key, value in vars(exc).items() if _plain(value)}
            body = {"detail": str(exc), "error": type(exc).__name__, "fields": fields}
            return status, json.dumps(body).encode()
    return None


def decode_error(body: Any) -> Exception | None:
    """The exception an error body carries, as the server's store raised it; None when the
    body is not one (`encode_error`'s shape with a known class)."""
    if not isinstance(body, dict) or not isinstance(body.get("detail"), str):
        return None
    name, fields = body.get("error"), body.get("fields")
    kind = ValueError if name == "ValueError" else getattr(errors, str(name), None)
    if not (isinstance(kind, type) and issubclass(kind, (errors.TrainforgeError, ValueError))
            and isinstance(fields, dict)):
        return None
    exc = kind.__new__(kind)
    Exception.__init__(exc, body["detail"])
    exc.__dict__.update(fields)
    return exc


def _plain(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
