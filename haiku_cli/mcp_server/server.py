"""The MCP server: the tools of `ServerScope` registered with the official SDK; failures as tool errors."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_core import PydanticCustomError

from haiku_cli import __version__
from haiku_cli.api import (
    DatabaseOverview,
    DocumentList,
    DocumentPictures,
    DocumentWithChunks,
    HaikuError,
    Hint,
    SearchResults,
)
from haiku_cli.mcp_server.sdk_import import require_sdk
from haiku_cli.mcp_server.tools import MAX_LIMIT, SEARCH_TYPES, Databases, ServerScope

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

# The SDK's content types, which the picture tool's result annotation names (evaluated here); without the
# SDK, build_server says how to install it. (`haiku mcp` has imported the SDK through `require_sdk` first.)
with contextlib.suppress(ImportError):
    from mcp_types import ImageContent, TextContent

# The two arguments naming one document, shared by the tools that take one.
HoldingDatabase = Annotated[str, Field(description="The database holding the document.")]
DocumentReference = Annotated[
    str,
    Field(description="The document's id as search hits give it (or a unique start of it), or its uri."),
]

INSTRUCTIONS = (
    "Search and read the user's local document databases. Every result names the database it came "
    "from; cite it. The databases in scope are listed by list_databases; tools that take `databases` "
    "can narrow to some of them, never reach others."
)

# Annotations are evaluated by the SDK in this module's globals, so their parts live here.
_ENUM = {"enum": list(SEARCH_TYPES)}
_LIMIT = f"How many hits, 1 to {MAX_LIMIT} (default 10)."
_PAGE = f"Page size, 1 to {MAX_LIMIT}."


def _not_true_or_false(value: Any) -> Any:
    # pydantic's lax mode reads JSON `true` as the count 1; a number given as "5" is still read.
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "expected a whole number")
    return value


NOT_TRUE_OR_FALSE = BeforeValidator(_not_true_or_false)


def build_server(scope: ServerScope) -> MCPServer:
    """An MCP server whose tools reach exactly the databases of `scope`, and only read them."""
    require_sdk()
    server = _server_class()(
        "haiku",
        title="haiku",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    _register_reading_tools(server, scope)
    if scope.model_configured():
        # Imported only then: their results' types load pydantic-ai, which a server without a model
        # never needs (it would be most of its start-up).
        from haiku_cli.mcp_server.answering import register_answering_tools

        register_answering_tools(server, scope)
    return server


def _server_class() -> type[MCPServer]:
    """The SDK's server, failures turned into one-sentence tool errors, unknown arguments refused."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    class HaikuMCPServer(MCPServer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._takes: dict[str, list[str] | None] = {}

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            # Every failure reaches the client as a tool error of one sentence; the server keeps running.
            if isinstance(arguments, dict) and (unknown := await self._unknown(name, arguments)):
                raise ToolError(unknown)
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(cause, ValidationError):
                    schema = next((t.input_schema for t in await self.list_tools() if t.name == name), {})
                    raise ToolError(_invalid_arguments(cause, schema)) from cause
                if isinstance(cause, HaikuError):
                    raise ToolError(_one_line(cause)) from cause
                if cause is not None and not isinstance(cause, ToolError):
                    raise ToolError(
                        f"internal error in haiku ({type(cause).__name__}); please report it"
                    ) from cause
                raise

        async def _unknown(self, name: str, arguments: dict[str, Any]) -> str | None:
            # The SDK drops arguments a tool does not take: a misspelt `limt` would search with the default.
            if name not in self._takes:
                # The tools are all registered before serving; listing them builds every tool's model,
                # so each tool's arguments are read once.
                tool = next((t for t in await self.list_tools() if t.name == name), None)
                self._takes[name] = None if tool is None else list(tool.input_schema.get("properties", {}))
            takes = self._takes[name]
            if takes is None:
                return None  # the SDK names an unknown tool itself
            extra = [key for key in arguments if key not in takes]
            if not extra:
                return None
            offered = f"it takes {', '.join(takes)}" if takes else "it takes no arguments"
            return f"unknown argument '{extra[0]}' for {name}; {offered}"

    return HaikuMCPServer


def _register_reading_tools(server: MCPServer, scope: ServerScope) -> None:
    """The tools that only read the databases in scope, never reaching a model or anything outside."""
    from mcp_types import ToolAnnotations

    reading = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    # Started with --sync-before-search, a search may write: it syncs the sources whose files changed.
    searching = reading.model_copy(update={"read_only_hint": not scope.ws.sync_before_search})

    @server.tool(annotations=reading)
    async def list_databases() -> list[DatabaseOverview]:
        """The databases this server can read: name, whether it exists, documents, chunks and embedder."""
        return await scope.list_databases()

    @server.tool(annotations=searching)
    async def search(
        query: Annotated[str, Field(description="What to look for.")],
        databases: Databases = None,
        type: Annotated[
            str,
            Field(description="hybrid (default), vector or fts.", json_schema_extra={"enum": SEARCH_TYPES}),
        ] = "hybrid",
        limit: Annotated[int | None, Field(description=_LIMIT), NOT_TRUE_OR_FALSE] = None,
        filter: Annotated[
            str | None,
            Field(
                description="SQL condition over document fields: uri, title, metadata.KEY, created_at "
                "(ISO dates), e.g. \"metadata.year = '2024'\"."
            ),
        ] = None,
    ) -> SearchResults:
        """Search the databases in scope; one ranked list, each hit labelled with its database."""
        return await scope.search(query, databases, type, limit, filter)

    @server.tool(annotations=reading)
    async def get_document(
        database: HoldingDatabase,
        document_id: DocumentReference,
    ) -> DocumentWithChunks:
        """One document with all its chunks."""
        return await scope.get_document(database, document_id)

    @server.tool(annotations=reading)
    async def get_pictures(
        database: HoldingDatabase,
        document_id: DocumentReference,
        references: Annotated[
            list[str] | None,
            Field(description="Which pictures, by reference as get_document lists them (default: all)."),
        ] = None,
    ) -> list[TextContent | ImageContent]:
        """A document's pictures (figures, scanned pages) as images, each after a label naming it."""
        found = await scope.pictures(database, document_id, references)
        return picture_content(found)

    @server.tool(annotations=reading)
    async def list_documents(
        database: Annotated[
            str | None, Field(description="The database to list (optional when only one is in scope).")
        ] = None,
        limit: Annotated[int, Field(description=_PAGE), NOT_TRUE_OR_FALSE] = 50,
        offset: Annotated[int, Field(description="How many documents to skip."), NOT_TRUE_OR_FALSE] = 0,
    ) -> DocumentList:
        """A page of one database's documents, oldest first."""
        return await scope.list_documents(database, limit, offset)


def _one_line(error: HaikuError) -> str:
    """The error as one line: each database's failure, then each distinct next step once."""
    parts = error.each()
    messages = "; ".join(" ".join(str(part).split("\n")) for part in parts)
    return messages + "".join(dict.fromkeys(_hint(part.hint) for part in parts))


def _hint(hint: Hint | None) -> str:
    # The next step in terms of this server's tools and arguments: a client cannot run `haiku list`, add
    # documents or pass `--type`.
    if hint is None:
        return ""
    if hint.action == "list_documents":
        return f"; list_documents with database '{hint.database}' gives the ids"
    if hint.action == "page_documents":
        return "; list_documents pages through every document"
    if hint.action == "choose_model":
        return ", or start haiku mcp with --model"
    if hint.action == "finish_upkeep":
        return f"; haiku vacuum on database '{hint.database}' finishes it"
    if hint.action == "fts_or_narrow":
        return (
            "; search them together with type 'fts', "
            "or narrow the databases argument to one embedder's databases"
        )
    return "; list_databases shows which databases in scope exist"


def _invalid_arguments(exc: ValidationError, schema: dict[str, Any]) -> str:
    # The SDK reports pydantic's multi-line text ("Input should be a valid integer", a URL); a client (or
    # model) needs which argument and what to send, worded as the CLI words `--limit abc`.
    error = exc.errors()[0]
    loc = error["loc"]
    if not loc:
        return "invalid arguments: expected an object of argument names and values"
    if error["type"] == "missing":
        wanted = _WANTED.get(schema.get("properties", {}).get(str(loc[0]), {}).get("type", ""))
        return f"missing argument '{loc[0]}'" + (f": expected {wanted}" if wanted else "")
    where = f"{loc[0]}" + "".join(f"[{part}]" for part in loc[1:])  # databases[0]
    return f"invalid argument '{where}': {_expected(error['type'], error['input'])}"


# What an argument of each JSON schema type takes, and the schema type each pydantic error is about.
_WANTED = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
}
_ERROR_KINDS = {"string": "string", "int": "integer", "float": "number", "bool": "boolean", "list": "array"}


def _expected(kind: str, given: object) -> str:
    shown = json.dumps(given, default=str)
    shown = shown if len(shown) <= 40 else shown[:39] + "…"
    wanted = _WANTED.get(_ERROR_KINDS.get(kind.split("_")[0], ""))
    if wanted is None:
        return f"unexpected value {shown}"
    if kind == "list_type" and isinstance(given, str):
        wanted += f", e.g. [{shown}]"
    return f"expected {wanted}, got {shown}"


def picture_content(found: DocumentPictures) -> list[TextContent | ImageContent]:
    """Each picture as a label (the one models get from `search`) and the image, base64 as MCP wants it."""
    import base64

    from haiku_cli.capabilities.picture_parts import label
    from haiku_cli.databases.pictures import PictureKey

    blocks: list[TextContent | ImageContent] = []
    for p in found.pictures:
        key = PictureKey(found.database, found.document.id, p.reference)
        blocks.append(TextContent(type="text", text=label(key, p, found.document.title)))
        mime = "image/jpeg" if p.format == "jpeg" else "image/png"
        blocks.append(ImageContent(type="image", data=base64.b64encode(p.data).decode(), mime_type=mime))
    if not blocks:
        blocks.append(
            TextContent(type="text", text=f"{found.document.title or found.document.id} has no pictures")
        )
    return blocks
