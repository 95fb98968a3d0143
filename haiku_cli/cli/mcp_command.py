"""`haiku mcp`: serve the selected databases to agents and editors over the Model Context Protocol."""

from __future__ import annotations

import sys
from functools import partial
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output
from haiku_cli.cli.options import (
    DATABASE_SET,
    At,
    ModelName,
    SyncBeforeSearch,
    listening,
    warn_if_open,
    workspace,
)
from haiku_cli.cli.running import add_command, run, usage_error

if TYPE_CHECKING:
    from haiku_cli.api import Selection


def register(app: typer.Typer) -> None:
    """Add the mcp command to the app."""
    add_command(app, "mcp", mcp)


_LISTENING = listening(8765, reached="clients may use to reach --http", when=" with --http")


def mcp(
    ctx: typer.Context,
    selection: Selection = DATABASE_SET,
    model: ModelName = None,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: str = _LISTENING.host,
    port: int = _LISTENING.port,
    allow_host: list[str] | None = _LISTENING.allow_host,
    at: At = None,
    sync_before_search: SyncBeforeSearch = False,
) -> None:
    """Serve the selected databases (all configured ones by default) as an MCP server, read-only.

    With --sync-before-search (or [mcp] sync_before_search), each search first syncs the remembered
    sources whose files changed, as search --sync does.

    Examples:

    \b
      haiku mcp                        stdio, for a desktop agent
      haiku mcp -d notes -d papers
      haiku mcp --http --sync-before-search   each search first syncs changed files
    """
    from haiku_cli.mcp_server.sdk_import import require_sdk

    # First: the SDK imported for one transport is cheaper (and a missing SDK is named before anything).
    require_sdk("http" if http else "stdio")
    from haiku_cli import api
    from haiku_cli.mcp_server.tools import ServerScope
    from haiku_cli.mcp_server.transport import is_loopback, serve

    ws = workspace(ctx)
    ws.read_at(at)
    ws.sync_before_search = sync_before_search or ws.settings.mcp.sync_before_search
    if ws.sync_before_search and at is not None:
        raise usage_error(
            "--sync-before-search ([mcp] sync_before_search) brings the databases up to date: "
            "it cannot serve a tag (--at)",
            ctx,
        )
    if at is not None:
        # A database without the tag is named before serving, not in the answer to some later tool call.
        run(lambda: api.check_tag(ws, selection))
    # A database that cannot be read is named before serving too; tool calls open them as they need them.
    _, not_created = run(lambda: ws.check_served(selection))
    for name in not_created:
        output.error(f"note: '{name}' has nothing added yet; searches skip it until something is")
    token = ws.settings.mcp.http_token
    if http:
        how = "[mcp] http_token or HAIKU_MCP_TOKEN"
        warn_if_open(host, is_loopback(host), selection.names, can="read", token=token, how=how)
    if not http and sys.stdin.isatty():
        # Run by hand, a stdio server just waits: say what it is waiting for.
        output.err.print(
            f"haiku: MCP server on stdio for {', '.join(selection.names)}; MCP clients launch this command "
            "themselves (see haiku help mcp). Ctrl-C to stop.",
            markup=False,
            soft_wrap=True,
        )
    scope = ServerScope(ws, selection, model)
    run(
        lambda: serve(
            scope,
            http=http,
            host=host,
            port=port,
            allow_hosts=allow_host or [],
            token=token,
            announce=partial(_announce, token_required=token is not None),
        )
    )


def _announce(url: str, *, token_required: bool) -> None:
    # The URL alone on stdout, for scripts and client configs; the human note on stderr.
    output.out.print(url, markup=False, highlight=False, soft_wrap=True)
    needs = "; requests must carry Authorization: Bearer <token>" if token_required else ""
    output.err.print(
        f"haiku: MCP server listening at {url}{needs} (Ctrl-C to stop)", markup=False, soft_wrap=True
    )
