"""What the sandbox may see of the selection: the document list, which database holds each id, and texts.

Everything is read on demand and kept for the question: the list (without content) when a program first
lists documents, an id's database when a program first touches it, and content in small read-ahead
batches along the listing order, so reading every document costs a query per batch, not per document.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable
from typing import TypeVar

from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.reading import read_each, read_one
from haiku_cli.databases.resolve import resolve_documents
from haiku_cli.databases.selection import Selection
from haiku_cli.store import reads
from haiku_cli.store.database import Database
from haiku_cli.store.picture_table import get_pictures, pictures_of
from haiku_cli.store.records import ChunkRecord, DocumentRecord, PictureInfo, PictureRecord

READ_AHEAD = 32  # documents fetched per content query when a program reads along the listing
_KEPT = 2 * READ_AHEAD  # read-ahead texts kept at most; the oldest go first

T = TypeVar("T")


class AmbiguousDocument(OSError):
    """An id held by several selected databases: a copied database, never resolved by guessing."""

    def __init__(self, document_id: str, databases: list[str]) -> None:
        names = " and ".join(repr(n) for n in databases)
        super().__init__(
            f"document id {document_id} is held by more than one selected database ({names}); one was "
            "probably copied from the other, so haiku will not guess which is meant. "
            "Ask about one of them at a time."
        )


class DocumentCatalog:
    """The selection's documents (narrowed by the filter), as sandboxed programs see them."""

    def __init__(
        self, pool: DatabasePool, selection: Selection, *, document_filter: str | None = None
    ) -> None:
        self._pool = pool
        self._selection = selection
        self._filter = document_filter
        self._listing: list[tuple[str, DocumentRecord]] | None = None
        self._holders: dict[str, list[str]] | None = None  # id -> every selected database holding it
        self._order: dict[str, int] = {}  # id -> position in the listing, for read-ahead
        # id -> (database, record without content), or None when the question cannot see it.
        self._resolved: dict[str, tuple[str, DocumentRecord] | None] = {}
        self._texts: OrderedDict[str, str] = OrderedDict()

    def forget(self) -> None:
        """Read the documents again when next asked (a sync before a search changed them)."""
        self._listing, self._holders, self._order = None, None, {}
        self._resolved.clear()
        self._texts.clear()

    async def listing(self) -> list[tuple[str, DocumentRecord]]:
        """Every visible document with its database, in selection order and oldest first; read once."""
        if self._listing is None:
            per_database = await read_each(
                self._pool,
                self._selection,
                lambda db: reads.list_documents(db, where=self._filter, limit=None),
            )
            listing = [
                (name, doc)
                for name, docs in zip(self._selection.names, per_database, strict=True)
                for doc in docs
            ]
            self._holders = await self._all_holders(listing)
            self._order = {}
            for database, doc in listing:
                self._order.setdefault(doc.id, len(self._order))
                if len(self._holders.get(doc.id, ())) == 1:
                    self._resolved.setdefault(doc.id, (database, doc))
            self._listing = listing
        return self._listing

    async def _all_holders(self, listing: list[tuple[str, DocumentRecord]]) -> dict[str, list[str]]:
        # With a filter the listing shows only matching copies; a duplicate id is refused whatever the
        # filter says, so its holders come from every id of every selected database.
        holders: dict[str, list[str]] = defaultdict(list)
        if self._filter is None:
            for database, doc in listing:
                holders[doc.id].append(database)
            return holders
        per_database = await read_each(self._pool, self._selection, reads.document_ids)
        for name, ids in zip(self._selection.names, per_database, strict=True):
            for document_id in ids:
                holders[document_id].append(name)
        return holders

    async def document_ids(self) -> list[str]:
        """Every visible id, once each, in listing order."""
        await self.listing()
        return list(self._order)

    async def find(self, document_id: str) -> tuple[str, DocumentRecord] | None:
        """The database holding a visible id, and its record; None if not visible.

        Raises `AmbiguousDocument` when several selected databases hold the id.
        """
        if self._holders is not None:
            holders = self._holders.get(document_id, [])
            if len(holders) > 1:
                raise AmbiguousDocument(document_id, holders)
            return self._resolved.get(document_id)
        if document_id not in self._resolved:
            res = await resolve_documents(self._pool, self._selection, [document_id])
            if document_id in res.ambiguous:
                raise AmbiguousDocument(document_id, res.ambiguous[document_id])
            found = res.found.get(document_id)
            if found is not None and self._filter and not await self._matches_filter(found[0], document_id):
                found = None
            self._resolved[document_id] = found
        return self._resolved[document_id]

    async def content(self, database: str, document_id: str) -> str:
        """A document's text, fetched with the next few documents of the listing from the same database."""
        text = self._texts.pop(document_id, None)
        if text is not None:
            return text
        batch = [document_id, *self._next_in_listing(database, document_id)]
        docs = await self._read(database, lambda db: reads.get_documents(db, batch, content=True))
        for other in batch[1:]:
            if other in docs:
                self._texts[other] = docs[other].content
        while len(self._texts) > _KEPT:
            self._texts.popitem(last=False)
        found = docs.get(document_id)
        return found.content if found is not None else ""

    async def chunks(self, database: str, document_id: str) -> list[ChunkRecord]:
        """A document's chunks in order."""
        return await self._read(database, lambda db: reads.chunks_of(db, document_id))

    async def pictures(self, database: str, document_id: str) -> list[PictureInfo]:
        """A document's pictures (without their bytes), in document order."""
        return (await self._read(database, lambda db: pictures_of(db, [document_id])))[document_id]

    async def picture(self, database: str, document_id: str, reference: str) -> PictureRecord | None:
        """One picture with its bytes, or None."""
        found = await self._read(database, lambda db: get_pictures(db, document_id, [reference]))
        return found[0] if found else None

    def _next_in_listing(self, database: str, document_id: str) -> list[str]:
        if self._listing is None or document_id not in self._order:
            return []
        following: list[str] = []
        for db_name, doc in itertools.islice(self._listing, self._order[document_id] + 1, None):
            if len(following) >= READ_AHEAD - 1:
                break
            if db_name == database and doc.id not in self._texts and self._resolved.get(doc.id) is not None:
                following.append(doc.id)
        return following

    async def _matches_filter(self, database: str, document_id: str) -> bool:
        where = f"id = {reads.sql_string(document_id)} AND ({self._filter})"
        return bool(await self._read(database, lambda db: reads.document_ids(db, where=where)))

    async def _read(self, database: str, read: Callable[[Database], Awaitable[T]]) -> T:
        # The one rule: nothing outside the selection is ever opened.
        location = next(loc for loc in self._selection.locations if loc.name == database)
        return await read_one(self._pool, location, read)
