"""Credentials in a spec: kept usable in memory, kept out of every record.

A value under a credential-like key of `storage_options` (`key`, `secret`, `token`,
`password`, `aws_secret_access_key`, ...; at any depth, e.g. inside `client_kwargs`) is held as a
`SecretStr`: its repr is masked, dumps of the spec leave it out (so it never reaches a run's
params, a log line or `trainforge runs show`), and `revealed()` hands the real value to fsspec
at the moment of use (or a dump with the `KEEP_CREDENTIALS` context, in memory only).
Overrides and command lines recorded on a run go through `redact_argument` (`_redaction`).
Credentials are better left out of specs altogether: fsspec reads them from the environment or
its own configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

from trainforge.config._redaction import is_secret_key

# Serialization context key: a dump in memory that keeps the credentials (to re-validate a spec
# after overrides), e.g. `spec.model_dump(context={KEEP_CREDENTIALS: True})`; never recorded.
KEEP_CREDENTIALS = "keep_credentials"


def hide_secrets(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options` with every credential value wrapped in `SecretStr`."""
    return {key: _hidden(key, value) for key, value in options.items()}


def without_secrets(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options` without its `SecretStr` values (what records may hold)."""
    return {key: without_secrets(value) if isinstance(value, Mapping) else value
            for key, value in options.items() if not isinstance(value, SecretStr)}


def revealed(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options` with the real credential values, to hand to fsspec."""
    return {key: _revealed(value) for key, value in options.items()}


def _hidden(key: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        return hide_secrets(value)
    if is_secret_key(key) and isinstance(value, str):
        return SecretStr(value)
    return value


def _revealed(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, Mapping):
        return revealed(value)
    return value
