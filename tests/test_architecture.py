"""The package's folders import one way, top to bottom, as the developers' brief lays them out."""

import ast
from pathlib import Path

import haiku_cli

PACKAGE = Path(haiku_cli.__file__).parent

# Lower numbers sit higher: a module may import its own folder or any folder with a larger number.
LAYERS = {
    "__main__": 0,
    "cli": 1,
    "web": 2,
    "mcp_server": 3,
    "api": 4,
    "chat": 5,
    "evaluation": 5,
    "agents": 6,
    "capabilities": 7,
    "sandbox": 8,
    "databases": 9,
    "search": 10,
    "ingest": 10,
    "embed": 11,
    "store": 12,
    "config": 13,
    "model_failures": 14,
    "errors": 15,
    "lazy_exports": 15,
    "__init__": 16,
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


# What cli/ may import besides itself: the front door, the errors and where config lives. `haiku mcp`
# starts the MCP server and `haiku serve` the web app, sibling front ends themselves built on the api.
CLI_MAY_IMPORT = (
    "haiku_cli.api",
    "haiku_cli.errors",
    "haiku_cli.config.paths",
    "haiku_cli.mcp_server",
    "haiku_cli.web",
)


def _module_of(path: Path) -> str:
    return ".".join(("haiku_cli", *path.relative_to(PACKAGE).with_suffix("").parts))


def test_the_cli_reaches_the_library_only_through_the_api() -> None:
    def allowed(name: str) -> bool:
        # `from haiku_cli import api` / `__version__` names the package itself.
        return name == "haiku_cli" or name.startswith("haiku_cli.cli") or name.startswith(CLI_MAY_IMPORT)

    stray = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path, folder, name in _imports()
        if folder == "cli" and not allowed(name)
    ]
    assert stray == []


def test_no_command_module_is_imported_as_a_library() -> None:
    # Only the app registers commands; shared pieces live in render, options, output, running.
    commands = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path, _folder, name in _imports()
        if name.removeprefix("haiku_cli.cli.").endswith(("_command", "_commands")) and path.name != "app.py"
    ]
    assert commands == []


def _runtime_imports(path: Path) -> set[str]:
    """The haiku_cli modules a file imports at run time, inside functions too (not for type checking)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("haiku_cli"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("haiku_cli"))
    return found


def test_no_folder_has_an_import_circle() -> None:
    # A lazy import inside a function still makes a circle: it only hides it from the interpreter.
    modules = {_module_of(path): path for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"}
    graph = {
        module: {name for name in _runtime_imports(path) if name in modules and name != module}
        for module, path in modules.items()
    }
    circles = []

    def visit(module: str, trail: list[str]) -> None:
        for target in graph[module]:
            if target == trail[0]:
                circles.append(" -> ".join([*trail, target]))
            elif target not in trail and _folder(target) == _folder(trail[0]):
                visit(target, [*trail, target])

    for module in graph:
        visit(module, [module])
    assert circles == []


def _all_imports(path: Path, modules: set[str]) -> set[str]:
    """The haiku_cli modules (packages as their `__init__`) a file imports: at run time, inside
    functions, and for type checking alike."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("haiku_cli"):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("haiku_cli"))
    return found & modules


def test_no_module_is_in_an_import_circle_type_checking_imports_included() -> None:
    # A circle through a TYPE_CHECKING import still ties two modules together: neither can be read,
    # moved or tested without the other.
    def name(path: Path) -> str:
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        return ".".join(("haiku_cli", *(parts[:-1] if parts[-1] == "__init__" else parts)))

    paths = {name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {module: _all_imports(path, set(paths)) - {module, "haiku_cli"} for module, path in paths.items()}
    circles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in trail:
                circles.append([*trail[trail.index(target) :], target])
            elif target not in done:
                visit(target, [*trail, target])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert [" -> ".join(c) for c in circles] == []


def test_modules_and_functions_stay_small() -> None:
    # A module over 500 lines or a function over 80 is where a reader loses the thread: split it.
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if source.count("\n") > 500:
            too_long.append(f"{path.relative_to(PACKAGE)}: {source.count(chr(10))} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > 80:
                    too_long.append(f"{path.relative_to(PACKAGE)}: {node.name} is {length} lines")
    assert too_long == []


# Base names more than one module may carry, each because every holder is plainly its own folder's: a
# package's `__init__.py`, and the application of the two layers that have one (`cli/app.py` builds the
# typer command line, `web/app.py` the web page's routes).
SHARED_BASE_NAMES = {"__init__.py": None, "app.py": {"cli/app.py", "web/app.py"}}


def test_no_two_modules_share_a_base_name() -> None:
    # `pictures.py` in three folders makes a reader open each to learn which one holds what: a module's
    # name alone says where a thing is.
    holders: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        holders.setdefault(path.name, set()).add(path.relative_to(PACKAGE).as_posix())

    def allowed(name: str, paths: set[str]) -> bool:
        return len(paths) == 1 or (name in SHARED_BASE_NAMES and SHARED_BASE_NAMES[name] in (None, paths))

    shared = {name: sorted(paths) for name, paths in holders.items() if not allowed(name, paths)}
    assert shared == {}


def test_no_block_is_at_cyclomatic_complexity_e_or_f() -> None:
    # Over 30 paths through one function (radon's E and F) is more than a reader or a test can follow:
    # split it. Closures count towards the function that holds them, as radon counts them.
    from radon.complexity import cc_rank, cc_visit

    tangled = [
        f"{path.relative_to(PACKAGE)}: {block.fullname} is {cc_rank(block.complexity)} ({block.complexity})"
        for path in sorted(PACKAGE.rglob("*.py"))
        for block in cc_visit(path.read_text(encoding="utf-8"))
        if cc_rank(block.complexity) in ("E", "F")
    ]
    assert tangled == []
