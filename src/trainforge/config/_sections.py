"""The base of every spec section: unknown keys refused, frozen, YAML's boolean words read as
the choices they spell; and the base of a section naming an fsspec location."""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from trainforge.config._loading import YAML_BOOLEAN_WORDS
from trainforge.config._secrets import KEEP_CREDENTIALS, hide_secrets, revealed, without_secrets


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _booleans_as_words(cls, data: Any) -> Any:
        """A boolean given to a choice field that has a word YAML reads as that boolean
        (`off`, `on`, `yes`, `no`) means that word."""
        if not isinstance(data, dict):
            return data
        fixed = dict(data)
        for name, value in data.items():
            field = cls.model_fields.get(name)
            if isinstance(value, bool) and field is not None:
                words = [choice for choice in _choices(field.annotation)
                         if choice.lower() in YAML_BOOLEAN_WORDS[value]]
                if len(words) == 1:
                    fixed[name] = words[0]
        return fixed


def _choices(annotation: Any) -> list[str]:
    """The string values of a `Literal[...]` annotation (also inside `X | None`)."""
    if get_origin(annotation) is Literal:
        return [arg for arg in get_args(annotation) if isinstance(arg, str)]
    return [choice for arg in get_args(annotation) for choice in _choices(arg)]


class _FsspecOptions(_Section):
    """A section naming a location through fsspec: its `storage_options`, whose credential-like
    keys are hidden (`SecretStr`), left out of every dump and revealed only for fsspec."""

    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options (client_kwargs.endpoint_url, ...); "
        "credentials are better left to the environment, and are never recorded"
    )

    @field_validator("storage_options")
    @classmethod
    def _hide_credentials(cls, options: dict[str, Any]) -> dict[str, Any]:
        return hide_secrets(options)

    @field_serializer("storage_options")
    def _drop_credentials(
        self, options: dict[str, Any], info: SerializationInfo
    ) -> dict[str, Any]:
        if (info.context or {}).get(KEEP_CREDENTIALS):
            return revealed(options)
        return without_secrets(options)

    def fsspec_options(self) -> dict[str, Any]:
        """`storage_options` with the real credential values, for fsspec (never record it)."""
        return revealed(self.storage_options)
