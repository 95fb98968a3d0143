"""The web app's routes: the page, what the server covers, the AG-UI endpoint and what a citation opens
(its document, the pictures it covers, and for a PDF its page drawn with the passage highlighted)."""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Callable, Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from haiku_cli.agents.model_names import checked_model_name
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import HaikuError, InputError
from haiku_cli.mcp_server.tools import ServerScope
from haiku_cli.mcp_server.transport import accepted_names, announced, listen
from haiku_cli.store.heap import freeze_long_lived
from haiku_cli.web.guard import Guard
from haiku_cli.web.welcome import welcome

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from haiku_cli.capabilities.state import Source
    from haiku_cli.web.runs import Conversations

STATIC = {
    "app.js": "text/javascript",
    "markdown.js": "text/javascript",
    "app.css": "text/css",
    "index.html": "text/html",
}
IMAGE_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg"}


class WebApp:
    """What `haiku serve` serves: its databases (the server's whole world) and the conversation agent."""

    def __init__(
        self,
        ws: Workspace,
        selection: Selection,
        model: str | Model,
        *,
        analysis: bool,
        not_created: Sequence[str],
    ) -> None:
        self.scope = ServerScope(ws, selection, model)
        self.model = model
        self.analysis = analysis
        self.not_created = list(not_created)
        self._building = anyio.Lock()

    # The agent and its capabilities are built for the first request that needs them, not at start: a
    # server takes its first request after little more than a cold search's work.
    @cached_property
    def sources(self) -> list[Source]:
        """The databases served, as the conversation's state names them."""
        from haiku_cli.capabilities.scope import sources_of

        return sources_of(self.scope.ws, self.scope.selection)

    @cached_property
    def conversations(self) -> Conversations:
        """The agent every question runs, with the model built for it (pydantic-ai loads here)."""
        from haiku_cli.web.model import serving_model
        from haiku_cli.web.runs import Conversations

        model = serving_model(self.scope.ws.settings.model, self.model)
        return Conversations(self.scope.ws, self.sources, model, analysis=self.analysis)

    async def ready_conversations(self) -> Conversations:
        """`conversations`, built in a worker thread the first time (loading pydantic-ai takes a while),
        so the page's other requests are answered meanwhile."""
        async with self._building:
            if "conversations" not in self.__dict__:
                await anyio.to_thread.run_sync(lambda: self.conversations)
                freeze_long_lived()  # pydantic-ai and the agent live as long as the server
        return self.conversations

    @classmethod
    async def open(
        cls, ws: Workspace, selection: Selection, model: str | Model | None = None, *, analysis: bool = False
    ) -> WebApp:
        """Check the model string and the databases now, so a missing one fails before the page is
        served (requests open them). A model whose provider is known but not set up (no API key) is
        served anyway: the first question gets the reason. A local database nothing was added to yet is
        left out (and named), as `search` does.
        """
        # A ready model as given; a model string checked by name, without loading pydantic-ai.
        chosen = (
            checked_model_name(ws.settings.model, model) if model is None or isinstance(model, str) else model
        )
        searched, not_created = await ws.check_served(selection)
        return cls(ws, searched, chosen, analysis=analysis, not_created=not_created)

    async def info(self) -> dict[str, Any]:
        """What the page needs to know: the databases (and their state form), where narrowing goes, and
        what its first view shows (counts, example questions)."""
        return {
            "databases": [source.model_dump(mode="json") for source in self.sources],
            "state_keys": (await self.ready_conversations()).state_keys,
            "analysis": self.analysis,
            "not_created": self.not_created,
            "welcome": await welcome(self.scope),
        }

    def routes(self, names: Sequence[str], token: str | None) -> Starlette:
        """The ASGI app, behind the Host/Origin check and the token."""
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def info(_: Request) -> Response:
            return JSONResponse(await self.info())

        async def agui(request: Request) -> Response:
            return await (await self.ready_conversations()).respond(request)

        async def document(request: Request) -> Response:
            found = await self.scope.get_document(_param(request, "database"), _param(request, "document"))
            return JSONResponse(found.model_dump(mode="json"))

        async def picture(request: Request) -> Response:
            from starlette.responses import Response

            found = await self.scope.pictures(
                _param(request, "database"), _param(request, "document"), [_param(request, "reference")]
            )
            [pic] = found.pictures
            kind = IMAGE_TYPES.get(pic.format.lower(), "application/octet-stream")
            return Response(pic.data, media_type=kind, headers={"cache-control": "no-store"})

        async def page(request: Request) -> Response:
            from starlette.responses import Response

            from haiku_cli.databases.pictures import visualize_chunk

            number = _param(request, "page")
            if not number.isdigit():
                raise InputError(f"page must be a number, not {number!r}")
            with tempfile.TemporaryDirectory(prefix="haiku-serve-page-") as folder:
                drawn = await visualize_chunk(
                    self.scope.ws,
                    self.scope.location(_param(request, "database")),
                    _param(request, "chunk"),
                    Path(folder),
                )
                wanted = [p for p in drawn.pages if p.page == int(number)]
                if not wanted:
                    raise InputError(f"the chunk is not on page {number}")
                data = Path(wanted[0].path).read_bytes()
            return Response(data, media_type="image/png", headers={"cache-control": "no-store"})

        app = Starlette(
            routes=[
                Route("/", _static("index.html")),
                *(Route(f"/static/{name}", _static(name)) for name in STATIC),
                Route("/api/info", info),
                Route("/api/agui", agui, methods=["POST"]),
                Route("/api/document", _answering(document)),
                Route("/api/picture", _answering(picture)),
                Route("/api/page", _answering(page)),
            ]
        )
        return Guard(app, names, token)  # type: ignore[return-value]


def _param(request: Request, name: str) -> str:
    value = request.query_params.get(name, "").strip()
    if not value:
        raise InputError(f"missing the query parameter '{name}'")
    return value


def _answering(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """A route whose bad input (an unknown database or document) is a 400 with the one-line reason."""

    async def route(request: Request) -> Response:
        from starlette.responses import JSONResponse

        try:
            return await handler(request)
        except HaikuError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400 if isinstance(exc, InputError) else 500)

    return route


def _static(name: str) -> Callable[[Request], Any]:
    async def route(_: Request) -> Response:
        from starlette.responses import Response

        body = resources.files("haiku_cli.web").joinpath("static", name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"cache-control": "no-store"})

    return route


async def serve(
    app: WebApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8780,
    allow_hosts: Sequence[str] = (),
    token: str | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the page on host:port (0: any free port), announcing its URL once listening."""
    import uvicorn

    sock: socket.socket = listen(host, port)
    url = f"http://{announced(host)}:{sock.getsockname()[1]}/"
    asgi = app.routes(accepted_names(host, allow_hosts), token)
    config = uvicorn.Config(asgi, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    if announce is not None:
        announce(url)
    await uvicorn.Server(config).serve(sockets=[sock])
