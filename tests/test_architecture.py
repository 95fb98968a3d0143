"""The package's folders import one way, top to bottom, as the developers' brief lays them out."""

import ast
from pathlib import Path

import haiku_cli

PACKAGE = Path(haiku_cli.__file__).parent

# Lower numbers sit higher: a module may import its own folder or any folder with a larger number.
LAYERS = {
    "__main__": 0,
    "cli": 1,
    "mcp_server": 2,
    "api": 3,
    "chat": 4,
    "agents": 5,
    "capabilities": 6,
    "sandbox": 7,
    "databases": 8,
    "search": 9,
    "ingest": 9,
    "embed": 10,
    "store": 11,
    "config": 12,
    "model_failures": 13,
    "errors": 14,
    "__init__": 15,
}


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports() -> list[tuple[Path, str, str]]:
    """Every (file, its folder, imported haiku_cli module) in the package, lazy imports included."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        folder = path.relative_to(PACKAGE).with_suffix("").parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found += [(path, folder, name) for name in names if name.split(".")[0] == "haiku_cli"]
    return found


def test_every_folder_has_a_layer() -> None:
    folders = {path.relative_to(PACKAGE).with_suffix("").parts[0] for path in PACKAGE.rglob("*.py")}
    assert folders <= LAYERS.keys(), f"place new folders in LAYERS: {sorted(folders - LAYERS.keys())}"


def test_no_folder_imports_a_higher_one() -> None:
    upward = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path, folder, name in _imports()
        if _folder(name) != folder and LAYERS[_folder(name)] < LAYERS[folder]
    ]
    assert upward == []


def test_relative_imports_are_not_used() -> None:
    # Relative imports would hide a folder crossing from the check above.
    relative = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert relative == []
