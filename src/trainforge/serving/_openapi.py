"""The serve app's OpenAPI description: `POST /predict` with its request schema generated from
the production version's input contract, its answer and its error bodies; the answers of
`/health` and `/metadata`.

Rules:
- A record's properties are the contract's columns: their JSON type (datetime: a date-time
  string), null where the contract is nullable, `minimum`/`maximum` from the contract's
  min/max (else the encoder's limits), `enum` from `allowed` (else the categories the model
  learned, when they have the column's type). Required: the columns the feature pipeline reads;
  other properties as the contract allows extra columns.
- The schema says what a client should send. The server refuses (422) what breaks a type, a
  null, a required or extra field or the encoder's limits; a value outside the contract's
  range or a category the model never learned is scored and flagged, as each property's
  description says.
- The answer's predictions are those of the production version and of the canary when one is
  served (task and classes may differ).
- Without a production version the request is any non-empty list of objects.
- Every error is `{"detail": [{"record", "field", "error"}]}`: `record` the index of the record
  in the request (from 0) and `field` the field at fault, null where the error is the body's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from trainforge.serving._checks import TYPE_CHECKS, RecordChecker
from trainforge.serving._model import ServedVersion
from trainforge.validate import ColumnRule

JSON_TYPES = {"int": "integer", "float": "number", "string": "string", "bool": "boolean",
              "datetime": "string"}
ERROR_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["detail"],
    "properties": {"detail": {"type": "array", "minItems": 1, "items": {
        "type": "object",
        "required": ["record", "field", "error"],
        "properties": {
            "record": {"type": ["integer", "null"], "minimum": 0,
                       "description": "index of the record in the request (from 0); null "
                                      "when the error is the body's"},
            "field": {"type": ["string", "null"], "description": "the field at fault"},
            "error": {"type": "string", "description": "what is wrong and what was expected"},
        },
    }}},
}
ERRORS = {
    "400": "The body is not valid JSON (or nested too deep to parse).",
    "413": "The body is over the server's size limit.",
    "415": "The body is not sent as `Content-Type: application/json`.",
    "422": "The body is not a non-empty list of objects, or a record breaks the input contract "
           "(type, null, missing or extra field, a number beyond the encoder's limits).",
    "500": "The served version failed to score the records (logged by the server).",
    "503": "The model has no production version.",
}
FLAG: dict[str, Any] = {
    "type": "object",
    "required": ["field", "flag", "value"],
    "properties": {
        "field": {"type": "string"},
        "flag": {"enum": ["out_of_range", "unseen_category"]},
        "value": {"description": "the value as sent"},
        "expected": {"type": "array", "items": {"type": "number"}, "minItems": 2,
                     "maxItems": 2, "description": "the training profile's [min, max]"},
    },
}


class HealthAnswer(BaseModel):
    """`/health`: 200 with a production version, 503 without."""

    status: str
    model: str
    versions: dict[str, str | None]


class MetadataAnswer(BaseModel):
    """`/metadata`: the served versions' lineage, null for a role no version holds."""

    model: str
    canary_share: float
    production: dict[str, Any] | None
    canary: dict[str, Any] | None


def predict_operation(production: ServedVersion | None,
                      canary: ServedVersion | None) -> dict[str, Any]:
    """The OpenAPI path item of `POST /predict` for the versions now served."""
    records = {"type": "array", "minItems": 1,
               "items": _record(production.checker) if production else {"type": "object"}}
    answers = [_prediction(served) for served in (production, canary) if served is not None]
    unique = [a for i, a in enumerate(answers) if a not in answers[:i]]
    prediction = {"anyOf": unique} if len(unique) > 1 else unique[0] if unique else {}
    responses: dict[str, Any] = {"200": {
        "description": "One prediction per record, in order, with its profile flags.",
        "content": {"application/json": {"schema": _answer(prediction)}},
    }}
    for status, description in ERRORS.items():
        responses[status] = {"description": description,
                             "content": {"application/json": {"schema": ERROR_BODY}}}
    return {"post": {
        "summary": "Score records",
        "description": "Scores a JSON list of raw records with the production version (or "
                       "the canary, for its share of requests).",
        "operationId": "predict",
        "parameters": [{"name": "X-Request-ID", "in": "header", "required": False,
                        "schema": {"type": "string"},
                        "description": "routes by its hash: the same id, the same version"}],
        "requestBody": {"required": True,
                        "content": {"application/json": {"schema": records}}},
        "responses": responses,
    }}


def _record(checker: RecordChecker) -> dict[str, Any]:
    properties = {name: _property(rule, checker.limits.get(name), checker.categories.get(name))
                  for name, rule in checker.rules.items()}
    return {"type": "object", "properties": properties, "required": list(checker.required),
            "additionalProperties": checker.allow_extra}


def _property(rule: ColumnRule, limits: tuple[float, float] | None,
              learned: frozenset[Any] | None) -> dict[str, Any]:
    kind = JSON_TYPES[rule.type]
    schema: dict[str, Any] = {"type": [kind, "null"] if rule.nullable else kind}
    if rule.type == "datetime":
        schema["format"] = "date-time"
    notes = _bounds(schema, rule, limits) if rule.type in ("int", "float") else []
    categories = rule.allowed if rule.allowed is not None else sorted(
        v for v in learned or () if TYPE_CHECKS[rule.type](v))
    if categories:
        schema["enum"] = [*categories, None] if rule.nullable else list(categories)
    if learned is not None:
        notes.append("A category the model never learned is scored as __other__ and flagged "
                     "unseen_category.")
    if notes:
        schema["description"] = " ".join(notes)
    return schema


def _bounds(schema: dict[str, Any], rule: ColumnRule,
            limits: tuple[float, float] | None) -> list[str]:
    """Set a number's `minimum`/`maximum` (the tighter of the contract's and the limits);
    return what the description says of them."""
    low, high = limits if limits is not None else (None, None)
    for key, contract, limit, pick in (("minimum", rule.min, low, max),
                                       ("maximum", rule.max, high, min)):
        bounds = [b for b in (contract, limit) if b is not None]
        if bounds:
            schema[key] = pick(bounds)
    notes = []
    if rule.min is not None or rule.max is not None:
        notes.append("A value outside the contract's range is scored and flagged out_of_range.")
    if limits is not None:
        notes.append(f"Beyond {low!r} to {high!r} (what the features can hold) it is refused.")
    return notes


def _prediction(served: ServedVersion) -> dict[str, Any]:
    classes = list(served.classes)
    if served.task == "binary":
        fields = {"prediction": {"enum": classes or [0, 1]},
                  "probability": {"type": "number", "minimum": 0, "maximum": 1}}
    elif served.task == "multiclass":
        names = [str(c) for c in classes]
        fields = {"prediction": {"enum": classes},
                  "probabilities": {"type": "object", "required": names,
                                    "properties": {n: {"type": "number"} for n in names},
                                    "additionalProperties": False}}
    else:
        fields = {"prediction": {"type": "number"}}
    return {"type": "object", "required": [*fields, "flags"],
            "properties": {**fields, "flags": {"type": "array", "items": FLAG}}}


def _answer(prediction: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["model", "version", "role", "predictions", "flagged"],
        "properties": {
            "model": {"type": "string"},
            "version": {"type": "string"},
            "role": {"enum": ["production", "canary"]},
            "predictions": {"type": "array", "minItems": 1, "items": prediction},
            "flagged": {"type": "integer", "minimum": 0,
                        "description": "how many records have a flag"},
        },
    }
