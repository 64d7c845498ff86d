"""Import the scripts under examples/ (not a package) by their file path."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example_script(example: str, script: str) -> ModuleType:
    """`examples/<example>/<script>` as a module, e.g. ("fraud", "generate.py")."""
    path = EXAMPLES / example / script
    spec = importlib.util.spec_from_file_location(f"{example}_{path.stem}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
