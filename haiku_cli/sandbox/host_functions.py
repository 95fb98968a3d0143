"""Functions sandboxed code may call on the host: `search` and `list_documents`, over the same selection.

They are async here; the runner awaits them, so from inside the sandbox they are ordinary calls.
Every value they return is plain JSON-like data (dicts, lists, strings, numbers), as the sandbox requires.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from haiku_cli.databases import queries
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.sandbox.bounds import check_result_size
from haiku_cli.sandbox.catalog import DocumentCatalog
from haiku_cli.sandbox.mount import ROOT
from haiku_cli.search.hits import SearchHit

MAX_SEARCH_LIMIT = 50

HostFunction = Callable[..., Awaitable[Any]]
HitsSeen = Callable[[list[SearchHit]], None]


class HostFunctions:
    """The selection's search and document list, as the sandbox sees them."""

    def __init__(
        self,
        ws: Workspace,
        selection: Selection,
        catalog: DocumentCatalog,
        *,
        document_filter: str | None = None,
        on_hits: HitsSeen | None = None,
    ) -> None:
        self._ws = ws
        self._selection = selection
        self._catalog = catalog  # the same list the /documents view shows, read once
        self._filter = document_filter
        # Lets the caller record what the program saw, so those chunks count as evidence.
        self._on_hits = on_hits
        self._notes: dict[str, None] = {}  # what syncing before this execution's searches did, once each

    def mapping(self) -> dict[str, HostFunction]:
        """The functions by the names sandboxed code calls them."""
        return {"search": self.search, "list_documents": self.list_documents}

    async def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Search the selection (hybrid; full text across embedders); hits name database and chunk id."""
        if not isinstance(query, str):
            raise TypeError(f"search() query must be a string, not {type(query).__name__}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"search() limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
        if not query.strip():
            raise ValueError("search() query is empty")
        await self._sync_first()
        hits = await queries.search_hits(
            self._ws, self._selection, query, search_type="auto", limit=limit, document_filter=self._filter
        )
        found = [hit_dict(hit) for hit in hits]
        # Checked here too, before the hits count as seen: a refused result was never read by the program.
        check_result_size("search", found, self._ws.settings.sandbox.memory_mb)
        if self._on_hits is not None:
            self._on_hits(hits)
        return found

    async def _sync_first(self) -> None:
        """`haiku serve --sync-before-search`: the operator's rule for every search, the program's too: the
        sources whose files changed are synced first, and the program's output says what was done."""
        if not self._ws.sync_before_search:
            return
        from haiku_cli.databases.refreshing import sync_first  # the write path, loaded only when on

        done = await sync_first(self._ws, self._selection)
        if done.wrote:
            self._catalog.forget()  # /documents and list_documents() show what the sync wrote
        self._notes.update(dict.fromkeys(done.notes))

    def take_notes(self) -> list[str]:
        """What syncing before the searches of the execution that just ran did (then forgotten)."""
        if not self._notes:
            return []
        notes, self._notes = list(self._notes), {}
        return ["Before a search() of this program: " + "; ".join(notes) + "."]

    async def list_documents(self) -> list[dict[str, Any]]:
        """Every document of the selection (without content), labelled with its database, oldest first."""
        return [
            {
                "id": doc.id,
                "database": database,
                "title": doc.title,
                "uri": doc.uri,
                "metadata": doc.metadata,
                "created_at": doc.created_at.isoformat(),
                "path": f"{ROOT}/{doc.id}/",
            }
            for database, doc in await self._catalog.listing()
        ]


def hit_dict(hit: SearchHit) -> dict[str, Any]:
    """A search hit as sandboxed code receives it: the fields of `haiku search --json`, and its folder."""
    return {**hit.model_dump(mode="json"), "path": f"{ROOT}/{hit.document_id}/"}
