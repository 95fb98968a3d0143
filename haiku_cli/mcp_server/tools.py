"""What each MCP tool does, over the selection the server was started with and nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal, cast

from pydantic import BaseModel

from haiku_cli.agents.analyze import analyze
from haiku_cli.agents.ask import ask
from haiku_cli.agents.models import model_name
from haiku_cli.agents.question import AskResult
from haiku_cli.databases import operations
from haiku_cli.databases.concurrency import concurrently, in_threads
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import HaikuError, InputError, ModelError
from haiku_cli.search.candidates import SearchType
from haiku_cli.search.hits import SearchHit
from haiku_cli.store import reads
from haiku_cli.store.location import Location
from haiku_cli.store.records import DocumentRecord

SEARCH_TYPES: tuple[SearchType, ...] = ("hybrid", "vector", "fts")
MAX_LIMIT = 100


class DatabaseSummary(BaseModel):
    """One database in the server's scope; `error` says why it could not be read."""

    database: str
    documents: int | None = None
    chunks: int | None = None
    embedder: str | None = None
    error: str | None = None


@dataclass
class ServerScope:
    """The workspace, the start-up selection (the server's whole world) and the model, if any."""

    ws: Workspace
    selection: Selection
    model: str | None = None

    @property
    def names(self) -> list[str]:
        """The databases in scope, in selection order."""
        return self.selection.names

    def model_configured(self) -> bool:
        """Whether `ask` and `analyze` can run: a model string was given or configured."""
        try:
            model_name(self.ws.settings.model, self.model)
        except ModelError:
            return False
        return True

    def narrow(self, databases: Sequence[str] | None) -> Selection:
        """The scope, or the named part of it; a name outside the scope is refused, never reached."""
        if not databases:
            return self.selection
        return Selection(tuple(self.location(name) for name in dict.fromkeys(databases)))

    def location(self, name: str) -> Location:
        """The database of that name in scope."""
        for loc in self.selection.locations:
            if loc.name == name:
                return loc
        raise InputError(f"unknown database '{name}'; databases in scope: {', '.join(self.names)}")

    def one(self, name: str | None) -> Location:
        """The named database, or the only one in scope; with several, refuse to guess."""
        if name:
            return self.location(name)
        if len(self.selection.locations) == 1:
            return self.selection.locations[0]
        raise InputError(f"several databases are in scope; name one of: {', '.join(self.names)}")

    async def list_databases(self) -> list[DatabaseSummary]:
        """Documents, chunks and embedder of each database in scope; one unreadable database says why."""

        async def describe(loc: Location) -> DatabaseSummary:
            row = DatabaseSummary(database=loc.name)
            try:
                db = await self.ws.pool.open_one(loc)
                row.documents, row.chunks = await in_threads(
                    [partial(reads.count_documents, db), partial(reads.count_chunks, db)]
                )
                row.embedder = db.embedder.name
            except HaikuError as exc:
                row.error = " ".join(str(exc).split())
            return row

        return await concurrently([partial(describe, loc) for loc in self.selection.locations])

    async def search(
        self,
        query: str,
        databases: Sequence[str] | None = None,
        search_type: str = "hybrid",
        limit: int | None = None,
        document_filter: str | None = None,
    ) -> list[SearchHit]:
        """One fused ranking over the scope (or the named part of it), every hit labelled."""
        if not query.strip():
            raise InputError("the query is empty; give some words to search for")
        if search_type not in SEARCH_TYPES:
            raise InputError(f"unknown search type '{search_type}'; use hybrid, vector or fts")
        if limit is not None and not 1 <= limit <= MAX_LIMIT:
            raise InputError(f"limit must be between 1 and {MAX_LIMIT}")
        return await operations.search(
            self.ws,
            self.narrow(databases),
            query,
            search_type=cast(SearchType, search_type),
            limit=limit,
            document_filter=document_filter or None,
        )

    async def get_document(self, database: str, document_id: str) -> operations.DocumentWithChunks:
        """One document of a database in scope, with its chunks."""
        return await operations.get_document(self.ws, self.location(database), document_id)

    async def list_documents(
        self, database: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[DocumentRecord]:
        """A page of one database's documents, oldest first."""
        if not 1 <= limit <= MAX_LIMIT:
            raise InputError(f"limit must be between 1 and {MAX_LIMIT}")
        if offset < 0:
            raise InputError("offset must be 0 or more")
        return await operations.list_documents(
            self.ws, self.one(database), document_filter=None, limit=limit, offset=offset
        )

    async def answer(
        self, kind: Literal["ask", "analyze"], question: str, databases: Sequence[str] | None = None
    ) -> AskResult:
        """One question, one run (no conversation, no compaction); the answer with labelled citations."""
        selection = self.narrow(databases)
        run = ask if kind == "ask" else analyze
        result = await run(self.ws, selection, question, model=self.model)
        # The capabilities' internal state is for resuming runs, which a single-shot tool never does.
        return result.model_copy(update={"state": {}})
