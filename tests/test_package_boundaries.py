"""Packages meet through what each exports: no module imports a private module (`_name`) of
another package, so a package can rearrange its insides without breaking the others."""

from __future__ import annotations

import ast
from pathlib import Path

import trainforge

SOURCE = Path(trainforge.__file__).parent


def private_imports_across_packages() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        own = path.relative_to(SOURCE).parts[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            parts = node.module.split(".")
            if (parts[0] == "trainforge" and len(parts) > 2 and parts[1] != own
                    and any(part.startswith("_") for part in parts[2:])):
                found.append(f"{path.relative_to(SOURCE)}:{node.lineno} imports {node.module}")
    return found


def test_no_module_imports_another_packages_private_module() -> None:
    assert private_imports_across_packages() == []
