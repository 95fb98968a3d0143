"""Options shared by several commands, so every command spells them the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DatabaseNames = Annotated[
    list[str] | None,
    typer.Option(
        "--database", "-d", help="A configured database by name (repeatable where sets are allowed)."
    ),
]
DatabasePaths = Annotated[
    list[Path] | None,
    typer.Option("--db", help="A database by path; it is named after its file stem."),
]
ModelName = Annotated[
    str | None,
    typer.Option(
        "--model", "-m", help="Model string, e.g. openai:gpt-4o or openai-chat:NAME (default: config)."
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
Filter = Annotated[
    str | None,
    typer.Option("--filter", help="SQL condition over document fields: uri, title, metadata, created_at."),
]

SessionName = Annotated[
    str | None,
    typer.Option("--session", "-s", help="Continue (or start) the named saved session.", metavar="NAME"),
]
Rescope = Annotated[
    bool,
    typer.Option("--rescope", help="Let a resumed session cover other databases (or another filter)."),
]


def workspace(ctx: typer.Context):
    """The workspace the app callback loaded (config read once per process)."""
    from haiku_cli.databases.workspace import Workspace

    obj = ctx.find_root().obj
    if obj is None or "workspace" not in obj:
        from haiku_cli.cli import output
        from haiku_cli.cli.running import run

        config = obj.get("config") if obj else None
        ws = run(lambda: Workspace.load(config, on_write_wait=output.note))
        ctx.find_root().obj = {**(obj or {}), "workspace": ws}
        return ws
    return obj["workspace"]
