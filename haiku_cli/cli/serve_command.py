"""`haiku serve`: the selected databases in a browser, one conversation streamed over AG-UI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output
from haiku_cli.cli.options import (
    DATABASE_SET,
    ModelName,
    SyncBeforeSearch,
    listening,
    warn_if_open,
    workspace,
)
from haiku_cli.cli.running import add_command, run

if TYPE_CHECKING:
    from haiku_cli.api import Selection


def register(app: typer.Typer) -> None:
    """Add the serve command to the app."""
    add_command(app, "serve", serve)


_LISTENING = listening(8780, reached="browsers may use to reach the page")


def serve(
    ctx: typer.Context,
    selection: Selection = DATABASE_SET,
    model: ModelName = None,
    analysis: Annotated[
        bool, typer.Option("--analysis", help="Let the model also run Python over the documents.")
    ] = False,
    host: str = _LISTENING.host,
    port: int = _LISTENING.port,
    allow_host: list[str] | None = _LISTENING.allow_host,
    open_: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
    sync_before_search: SyncBeforeSearch = False,
) -> None:
    """Serve the selected databases (all configured ones by default) as a web page to ask questions in.

    With --sync-before-search, each search a question makes first syncs the remembered sources whose
    files changed, as search --sync does.

    Examples:

    \b
      haiku serve --open
      haiku serve -d papers --model openai:gpt-4o
      haiku serve --analysis --sync-before-search
    """
    from haiku_cli.web.extra import require_web

    require_web()
    from haiku_cli.mcp_server.transport import is_loopback
    from haiku_cli.web.app import WebApp
    from haiku_cli.web.app import serve as serve_app
    from haiku_cli.web.guard import TOKEN_ENV, serve_token

    ws = workspace(ctx)
    ws.sync_before_search = sync_before_search
    token = serve_token(ws.settings)
    can = "ask questions over"
    warn_if_open(host, is_loopback(host), selection.names, can=can, token=token, how=TOKEN_ENV)

    def announce(url: str) -> None:
        # The URL alone on stdout, for scripts; the human note on stderr.
        output.out.print(url, markup=False, highlight=False, soft_wrap=True)
        needs = f"; the page asks for the token ({TOKEN_ENV})" if token is not None else ""
        output.err.print(f"haiku: serving at {url}{needs} (Ctrl-C to stop)", markup=False, soft_wrap=True)
        if open_:
            import webbrowser

            # The fragment never leaves the browser: the page reads the token from it.
            webbrowser.open(url + (f"#token={token}" if token is not None else ""))

    async def go() -> None:
        app = await WebApp.open(ws, selection, model, analysis=analysis)
        for name in app.not_created:
            output.error(f"note: '{name}' has nothing added yet; it is left out until something is")
        await serve_app(
            app, host=host, port=port, allow_hosts=allow_host or [], token=token, announce=announce
        )

    run(go)
