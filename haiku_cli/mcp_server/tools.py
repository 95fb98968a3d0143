"""What each MCP tool does, over the selection the server was started with and nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from haiku_cli import api
from haiku_cli.agents.model_names import model_name

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from haiku_cli.search.candidates import SearchType

SEARCH_TYPES: tuple[SearchType, ...] = ("hybrid", "vector", "fts")
MAX_LIMIT = 100

# The argument narrowing a tool to some databases in scope, as every tool taking it describes it.
Databases = Annotated[
    list[str] | None,
    Field(description="Names of databases in scope to narrow to (default: all in scope)."),
]


@dataclass
class ServerScope:
    """The workspace, the start-up selection (the server's whole world) and the model, if any.

    `model` is a model string or, for host programs and tests, a ready pydantic-ai `Model`.
    """

    ws: api.Workspace
    selection: api.Selection
    model: str | Model | None = None

    @property
    def names(self) -> list[str]:
        """The databases in scope, in selection order."""
        return self.selection.names

    def model_configured(self) -> bool:
        """Whether `ask` and `analyze` can run: a model was given or configured."""
        if self.model is not None and not isinstance(self.model, str):
            return True
        try:
            model_name(self.ws.settings.model, self.model)
        except api.ModelError:
            return False
        return True

    def narrow(self, databases: Sequence[str] | None) -> api.Selection:
        """The scope, or the named part of it; a name outside the scope is refused, never reached."""
        if not databases:
            return self.selection
        return api.Selection(tuple(self.location(name) for name in dict.fromkeys(databases)))

    def location(self, name: str) -> api.Location:
        """The database of that name in scope."""
        for loc in self.selection.locations:
            if loc.name == name:
                return loc
        raise api.InputError(f"unknown database '{name}'; databases in scope: {', '.join(self.names)}")

    def one(self, name: str | None) -> api.Location:
        """The named database, or the only one in scope; with several, refuse to guess."""
        if name:
            return self.location(name)
        if len(self.selection.locations) == 1:
            return self.selection.locations[0]
        raise api.InputError(f"several databases are in scope; name one of: {', '.join(self.names)}")

    async def list_databases(self) -> list[api.DatabaseOverview]:
        """Each database in scope, as `haiku databases` shows it; one unreadable database says why."""
        return await api.overview(self.ws, self.selection)

    async def search(
        self,
        query: str,
        databases: Sequence[str] | None = None,
        search_type: str = "hybrid",
        limit: int | None = None,
        document_filter: str | None = None,
    ) -> api.SearchResults:
        """One fused ranking over the scope (or the named part of it), every hit labelled."""
        if not query.strip():
            raise api.InputError("the query is empty; give some words to search for")
        if search_type not in SEARCH_TYPES:
            raise api.InputError(f"unknown search type '{search_type}'; use hybrid, vector or fts")
        _check_limit(limit)
        selection = self.narrow(databases)
        # The operator's choice at start (`--sync-before-search`), never a client's: what was synced first,
        # or left alone, is in the result's notes.
        notes = await api.sync_before_search(self.ws, selection) if self.ws.sync_before_search else []
        found = await api.search(
            self.ws,
            selection,
            query,
            search_type=search_type,
            limit=limit,
            document_filter=document_filter or None,
        )
        found.notes = notes
        api.freeze_long_lived()  # the first search loaded what every later one reuses
        return found

    async def get_document(self, database: str, document_id: str) -> api.DocumentWithChunks:
        """One document of a database in scope, with its chunks."""
        return await api.get_document(self.ws, self.location(database), document_id)

    async def pictures(
        self, database: str, document_id: str, references: Sequence[str] | None = None
    ) -> api.DocumentPictures:
        """A document's pictures with their bytes (those named by `references`, when given)."""
        found = await api.document_pictures(self.ws, self.location(database), document_id)
        if references:
            wanted = set(references)
            unknown = sorted(wanted - {p.reference for p in found.pictures})
            if unknown:
                have = ", ".join(p.reference for p in found.pictures) or "none"
                raise api.InputError(f"no picture {', '.join(unknown)} in that document; it has: {have}")
            found.pictures = [p for p in found.pictures if p.reference in wanted]
        return found

    async def list_documents(
        self, database: str | None = None, limit: int = 50, offset: int = 0
    ) -> api.DocumentList:
        """A page of one database's documents, oldest first."""
        _check_limit(limit)
        if offset < 0:
            raise api.InputError("offset must be 0 or more")
        return await api.list_documents(self.ws, self.one(database), limit=limit, offset=offset)

    async def answer(
        self, kind: Literal["ask", "analyze"], question: str, databases: Sequence[str] | None = None
    ) -> api.AskResult:
        """One question, one run (no conversation, no compaction); the answer with labelled citations."""
        selection = self.narrow(databases)
        run = api.ask if kind == "ask" else api.analyze
        # The result's `state` (for resuming in Python) is excluded from its dump, so clients never see it.
        return await run(self.ws, selection, question, model=self.model)


def _check_limit(limit: int | None) -> None:
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise api.InputError(f"limit must be between 1 and {MAX_LIMIT}")
