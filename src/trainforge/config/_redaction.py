"""Which option names hold credentials, and arguments as they may be recorded (no pydantic:
the CLI redacts the hint it prints without loading it)."""

from __future__ import annotations

from trainforge.config._settings import mask_url_password

# Whole names (after lower-casing) and fragments that mark a credential.
_SECRET_NAMES = frozenset({"key", "secret", "token", "password", "passwd", "credentials",
                           "connection_string", "sas_token", "account_key"})
_SECRET_FRAGMENTS = ("secret", "password", "token", "access_key", "private_key", "api_key")
REDACTED = "***"


def is_secret_key(name: str) -> bool:
    """Whether an option called `name` holds a credential."""
    lowered = name.lower()
    return lowered in _SECRET_NAMES or any(part in lowered for part in _SECRET_FRAGMENTS)


def redact_argument(argument: str) -> str:
    """`argument` as it may be recorded: the value of a `path.to.secret=value` override
    replaced by `***`, and any password in a URL masked."""
    key, sep, _ = argument.partition("=")
    if sep and is_secret_key(key.rsplit(".", 1)[-1].lstrip("-")):
        return f"{key}={REDACTED}"
    return mask_url_password(argument) if "://" in argument else argument
