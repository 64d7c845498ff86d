"""The `trainforge` command line: thin commands that call the library and render results."""

from __future__ import annotations

from trainforge.cli._app import app, main

__all__ = ["app", "main"]
