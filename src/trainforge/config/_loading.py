"""YAML files into validated pydantic models, with `a.b=value` overrides and clear errors.

Every problem is reported as `FILE: field.path: what was expected, got what` so a user can go
straight to the line to fix.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import annotated_types
import yaml
from pydantic import BaseModel, ValidationError

from trainforge.errors import SpecError

M = TypeVar("M", bound=BaseModel)
# The words YAML 1.1 reads as booleans (`progress: off` arrives as False).
YAML_BOOLEAN_WORDS = {True: {"y", "yes", "on", "true"}, False: {"n", "no", "off", "false"}}


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """Read a YAML file whose top level must be a mapping."""
    if not path.is_file():
        raise SpecError([f"{path}: file not found"])
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError([f"{where}: malformed YAML: {problem}"]) from None
    if not isinstance(data, dict):
        raise SpecError([f"{path}: expected a mapping of keys at the top level, got {_kind(data)}"])
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str], source: str) -> dict[str, Any]:
    """Set `a.b.c=value` entries (value parsed as YAML) in a copy of `data`."""
    result = _deep_copy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise SpecError([f"{source}: override {item!r}: expected KEY.PATH=VALUE"])
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        _set_path(result, key.strip().split("."), value, item, source)
    return result


def apply_values(data: dict[str, Any], values: dict[str, Any], source: str) -> dict[str, Any]:
    """Set each dotted path of `values` to its value (already parsed, as JSON gives it) in a
    copy of `data`; `SpecError` naming a path that crosses a value that is no mapping."""
    result = _deep_copy(data)
    for path, value in values.items():
        _set_path(result, path.split("."), _deep_copy(value), f"{path}={value!r}", source)
    return result


def parse_model(model_cls: type[M], data: dict[str, Any], source: str) -> M:
    """Validate `data` against `model_cls`; raise SpecError naming each broken field."""
    try:
        return model_cls.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(model_cls, err, source) for err in exc.errors()]
        raise SpecError(problems) from None


def load_model(model_cls: type[M], path: Path, overrides: list[str] | None = None) -> M:
    """Read, override and validate a YAML file in one call."""
    data = read_yaml_mapping(path)
    if overrides:
        data = apply_overrides(data, overrides, str(path))
    return parse_model(model_cls, data, str(path))


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _set_path(node: Any, parts: list[str], value: Any, item: str, source: str) -> None:
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                where = ".".join(parts[: i + 1])
                raise SpecError([f"{source}: override {item!r}: {where}: no list item {part}"])
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            where = ".".join(parts[:i])
            raise SpecError([f"{source}: override {item!r}: {where} is not a mapping"])


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, (dict, list, str)):
        return {dict: "a mapping", list: "a list", str: f"the text {value!r}"}[type(value)]
    return repr(value)


def _describe(model_cls: type[BaseModel], err: Any, source: str) -> str:
    raw_loc = err["loc"]
    _, field_path = _field_path(model_cls, raw_loc)
    where = f"{source}: {field_path}" if field_path else source
    kind = err["type"]
    got = err.get("input")
    if kind == "missing":
        return f"{where}: required field is missing"
    if kind == "extra_forbidden":
        owner = _model_at(model_cls, raw_loc[:-1])
        known = list(owner.model_fields) if owner else []
        hint = difflib.get_close_matches(str(raw_loc[-1]), known, n=1)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else f"; known keys: {', '.join(known)}"
        return f"{where}: unknown key{suggestion}"
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"{where}: expected one of {expected}, got {got!r}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        expected = err.get("ctx", {}).get("expected_tags", "")
        tag = got.get("type") if isinstance(got, dict) else None
        tags = [t.strip(" '") for t in expected.split(",")]
        hint = difflib.get_close_matches(str(tag), tags, n=1)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        return f"{where}.type: expected one of {expected}, got {_kind(tag)}{suggestion}"
    if kind.startswith(("float", "int", "greater", "less")) or kind == "finite_number":
        return f"{where}: expected {_number_rule(model_cls, raw_loc)}, got {_kind(got)}"
    if kind.startswith("bool"):
        return f"{where}: expected true or false, got {_kind(got)}"
    if kind.startswith("string"):
        return f"{where}: expected a text, got {_kind(got)}"
    if kind in ("list_type", "too_short", "too_long"):
        detail = err["msg"].replace("List should", "expected a list that should")
        return f"{where}: {detail if kind != 'list_type' else 'expected a list'}, got {_kind(got)}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"{where}: expected a mapping, got {_kind(got)}"
    if kind == "value_error":
        return f"{where}: {err['msg'].removeprefix('Value error, ')}"
    return f"{where}: {err['msg']}, got {_kind(got)}"


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types an annotation may hold (Optional, Union, Annotated and lists opened)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _is_tag(node: Any, part: Any) -> bool:
    """True where pydantic put a discriminator tag (e.g. 'standardize') into an error's loc."""
    return isinstance(node, list) and isinstance(part, str)


def _tag_member(node: list[type[BaseModel]], part: str) -> type[BaseModel] | None:
    members = {typing.get_args(m.model_fields["type"].annotation)[0]: m for m in node}
    return members.get(part)


def _field_path(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], str]:
    """Drop the discriminator tags pydantic puts in `loc`; return (clean loc, dotted path)."""
    clean: list[Any] = []
    node: Any = model_cls
    for part in loc:
        if _is_tag(node, part):
            node = _tag_member(node, part)
            continue
        clean.append(part)
        node = _child(node, part)
    return tuple(clean), ".".join(str(p) for p in clean)


@dataclass(frozen=True)
class _MappingOf:
    """A `dict[str, Model]` field: any key leads to `value`."""

    value: Any


def _child(node: Any, part: Any) -> Any:
    """The type one step down from `node` along `part` (a field name, list index or dict key)."""
    if node is None:
        return None
    if isinstance(node, _MappingOf):
        return node.value
    if isinstance(part, int):
        return node
    is_model = isinstance(node, type) and issubclass(node, BaseModel)
    if not is_model or part not in node.model_fields:
        return None
    items: list[Any] = []
    mapping = False
    for option in _unwrap(node.model_fields[part].annotation):
        origin = typing.get_origin(option)
        if origin in (list, dict):
            mapping = origin is dict
            items.extend(_unwrap(typing.get_args(option)[-1]))
        else:
            items.append(option)
    models = [t for t in items if isinstance(t, type) and issubclass(t, BaseModel)]
    found = models if len(models) > 1 else (models[0] if models else None)
    return _MappingOf(found) if mapping and found is not None else found


def _model_at(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class at `loc` (an error's raw loc, tags included), or None."""
    node: Any = model_cls
    for part in loc:
        node = _tag_member(node, part) if _is_tag(node, part) else _child(node, part)
    return node if isinstance(node, type) else None


def _annotation_tree(annotation: Any) -> list[Any]:
    """Every type and metadata item inside an annotation (Annotated, Union, list opened)."""
    found = [annotation, *getattr(annotation, "__metadata__", ())]
    for arg in typing.get_args(annotation):
        found.extend(_annotation_tree(arg))
    return found


def _number_rule(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """'a number > 0', 'an integer >= 1', ... as declared on the field at `loc`."""
    names = [p for p in loc if not isinstance(p, int)]
    field_loc = loc[: len(loc) - loc[::-1].index(names[-1])] if names else ()
    owner = _model_at(model_cls, field_loc[:-1]) if field_loc else None
    if owner is None or field_loc[-1] not in owner.model_fields:
        return "a number"
    info = owner.model_fields[field_loc[-1]]
    tree = [*_annotation_tree(info.annotation), *info.metadata]
    is_int = int in tree and float not in tree
    symbols = {"Gt": (">", "gt"), "Ge": (">=", "ge"), "Lt": ("<", "lt"), "Le": ("<=", "le")}
    bounds: list[str] = []
    for item in tree:
        for cls_name, (symbol, attr) in symbols.items():
            if isinstance(item, getattr(annotated_types, cls_name)):
                rule = f"{symbol} {getattr(item, attr)}"
                if rule not in bounds:
                    bounds.append(rule)
    noun = "an integer" if is_int else "a number"
    return " ".join([noun, " and ".join(bounds)]).strip()
