"""Options shared by several commands, so every command spells them the same way."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from haiku_cli.api import Workspace


def _database_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion: the configured database names (nothing when the config cannot be read)."""
    from haiku_cli.api import Workspace
    from haiku_cli.errors import HaikuError

    config = (ctx.find_root().params or {}).get("config")
    try:
        known = Workspace.load(config).locations
    except HaikuError:
        return []
    return [name for name in known if name.startswith(incomplete)]


DatabaseNames = Annotated[
    list[str] | None,
    typer.Option(
        "--database",
        "-d",
        help="A configured database by name (repeatable where sets are allowed).",
        metavar="NAME",
        autocompletion=_database_names,
    ),
]
DatabasePaths = Annotated[
    list[Path] | None,
    typer.Option("--db", help="A database by path; it is named after its folder's stem.", metavar="PATH"),
]
ModelName = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model string, e.g. openai:gpt-4o or openai-chat:NAME (default: config).",
        metavar="MODEL",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text (shapes: docs/json.md).")]
Filter = Annotated[
    str | None,
    typer.Option(
        "--filter",
        help="SQL condition over document fields: uri, title, metadata.KEY, created_at (ISO dates), e.g. "
        "\"metadata.year = '2024'\" (docs/search.md).",
        metavar="SQL",
    ),
]


def whole_number(value: str) -> int:
    """Parse a count option: typer's own wording for `--limit abc` is pydantic's ("Input should be ...")."""
    try:
        return int(value)
    except ValueError:
        raise typer.BadParameter(f"expected a whole number, got {value!r}") from None


def port_number(value: str) -> int:
    """Parse a TCP port (0 for any free one), in the same words as `whole_number`."""
    port = whole_number(value)
    if not 0 <= port <= 65535:
        raise typer.BadParameter(f"expected a port number from 0 to 65535, got {value!r}")
    return port


Limit = Annotated[
    int | None,
    typer.Option(
        "--limit",
        "-n",
        help="How many results (default: [search] limit, 10).",
        metavar="N",
        parser=whole_number,
    ),
]

SessionName = Annotated[
    str | None,
    typer.Option("--session", "-s", help="Continue (or start) the named saved session.", metavar="NAME"),
]
Rescope = Annotated[
    bool,
    typer.Option("--rescope", help="Let a resumed session cover other databases (or another filter)."),
]


def workspace(ctx: typer.Context) -> Workspace:
    """The workspace the app callback loaded (config read once per process)."""
    from haiku_cli.api import Workspace

    root = ctx.find_root()
    obj = root.obj or {}
    if "workspace" not in obj:
        from haiku_cli.cli import output

        ws = Workspace.load(obj.get("config"), on_write_wait=output.note)
        root.obj = {**obj, "workspace": ws}
    return root.obj["workspace"]
