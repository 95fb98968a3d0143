"""Package exports imported on first use, listed once as the imports under `if TYPE_CHECKING:`.

Type checkers follow those imports; at run time each name is imported from the same place on first
lookup, so importing the package costs none of what it exports until a name is used.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def exports_of(module_file: str) -> dict[str, tuple[str, str]]:
    """Exported name -> (module, attribute there), read from the file's `if TYPE_CHECKING:` imports."""
    tree = ast.parse(Path(module_file).read_text(encoding="utf-8"))
    (block,) = (n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {
        alias.asname or alias.name: (node.module, alias.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def first_use_lookup(
    module_name: str, exports: dict[str, tuple[str, str]], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module `__getattr__` that imports an exported name on first lookup and keeps it in `namespace`."""

    def lookup(name: str) -> Any:
        if name in exports:
            module, attribute = exports[name]
            value = getattr(importlib.import_module(module), attribute)
            namespace[name] = value  # resolved once; later lookups skip this hook
            return value
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return lookup
