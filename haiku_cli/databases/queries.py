"""What the reading commands do (search, list, get, info, databases), callable from Python without the CLI.

Apart from operations.py, which holds the writing commands, so that a read imports none of the write path
(tests/cli/test_read_imports.py holds it).
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Literal

import anyio.to_thread

from haiku_cli.databases import fanout, references
from haiku_cli.databases.concurrency import concurrently
from haiku_cli.databases.freshness import RemoteCheck, check_documents
from haiku_cli.databases.reading import read_one
from haiku_cli.databases.results import DatabaseOverview, DocumentList, DocumentWithChunks, SearchResults
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import DatabaseError, InputError
from haiku_cli.search.candidates import SearchType
from haiku_cli.search.hits import SearchHit, best_per_document
from haiku_cli.store import facts, reads
from haiku_cli.store.database import Database, exists
from haiku_cli.store.location import Location
from haiku_cli.store.picture_table import pictures_of
from haiku_cli.store.published import published_info


async def search_hits(
    ws: Workspace,
    selection: Selection,
    query: str,
    *,
    search_type: SearchType | Literal["auto"] = "hybrid",
    limit: int | None = None,
    document_filter: str | None = None,
) -> list[SearchHit]:
    """One fused, labelled ranking over the selection (every database in it must exist)."""
    return await fanout.search_set(
        ws.pool,
        selection,
        query,
        embed_query=ws.embed_query,
        embedder_spec=ws.resolve_embedder_spec,
        search_type=search_type,
        limit=ws.settings.search.limit if limit is None else limit,
        document_filter=document_filter,
        vector_weight=ws.settings.search.vector_weight,
        check_remote=RemoteCheck(ws.settings) if ws.check_remote else None,
    )


async def search(
    ws: Workspace,
    selection: Selection,
    query: str,
    *,
    search_type: SearchType | Literal["auto"] = "hybrid",
    limit: int | None = None,
    document_filter: str | None = None,
    query_id: str | None = None,
    per_document: bool = False,
) -> SearchResults:
    """`haiku search`: like `search_hits`, but a local database not written yet is skipped and named.

    A set is searched as long as one of its databases exists; object storage is never guessed at, so a
    missing remote database still fails with its name. With `per_document`, each document is one hit (its
    best chunk) and `limit` counts documents.
    """
    # One look at each local folder (object storage is not looked at), done here: handing it to a worker
    # thread would cost far more than the look, a noticeable share of a warm full-text search.
    searched, not_created = searchable(selection)
    find = partial(search_hits, ws, searched, query, search_type=search_type, document_filter=document_filter)
    wanted = ws.settings.search.limit if limit is None else limit
    if not per_document:
        hits = await find(limit=wanted)
    else:
        # Chunks of one document crowd a ranking: look deeper until `wanted` documents are found, or
        # every chunk is seen. A limit out of range is searched as given, to be refused in its words.
        depth = min(4 * wanted, fanout.MAX_LIMIT) if 1 <= wanted <= fanout.MAX_LIMIT else wanted
        while True:
            chunks = await find(limit=depth)
            hits = best_per_document(chunks)[:wanted]
            if len(hits) >= wanted or len(chunks) < depth or depth >= fanout.MAX_LIMIT:
                break
            depth = min(4 * depth, fanout.MAX_LIMIT)
    return SearchResults(
        query=query,
        id="1" if query_id is None else query_id,  # a single query is query 1, as line 1 of --from is
        databases=searched.names,
        not_created=not_created,
        hits=hits,
    )


async def list_documents(
    ws: Workspace, location: Location, *, document_filter: str | None = None, limit: int = 50, offset: int = 0
) -> DocumentList:
    """`haiku list`: one page of documents, oldest first, saying whether more exist after it."""
    if limit < 1:
        raise InputError("limit must be at least 1", argument="limit")
    if offset < 0:
        raise InputError("offset must be 0 or more", argument="offset")
    page = partial(reads.list_documents, where=document_filter, limit=limit + 1, offset=offset)
    docs = await read_one(ws.pool, location, page)
    return DocumentList(
        database=location.name,
        offset=offset,
        limit=limit,
        truncated=len(docs) > limit,
        documents=[d.summary() for d in docs[:limit]],
    )


async def get_document(ws: Workspace, location: Location, document_id: str) -> DocumentWithChunks:
    """`haiku get`: one document with its chunks, named by id, unique id prefix, uri or path."""
    remote = RemoteCheck(ws.settings) if ws.check_remote else None

    async def read(db: Database) -> DocumentWithChunks:
        doc = await references.document(db, location, document_id)
        chunks, pictures, checks = await asyncio.gather(
            reads.chunks_of(db, doc.id), pictures_of(db, [doc.id]), check_documents(db, [doc.id], remote)
        )
        shown = DocumentWithChunks(database=db.name, document=doc, chunks=chunks, pictures=pictures[doc.id])
        return shown.model_copy(update=checks[doc.id].fields())

    return await read_one(ws.pool, location, read)


async def info(ws: Workspace, location: Location) -> facts.DatabaseInfo:
    """`haiku info`: counts, size, embedder, schema, versions, indexes."""
    return await read_one(ws.pool, location, facts.database_info)


async def overview(ws: Workspace, selection: Selection | None = None) -> list[DatabaseOverview]:
    """`haiku databases`: every configured database (or only the selection's), opened concurrently.

    Unlike a search, one database that cannot be read does not fail the whole list: its row says why.
    """
    locations = ws.locations.values() if selection is None else selection.locations

    async def describe(loc: Location) -> DatabaseOverview:
        row = DatabaseOverview(
            database=loc.name, kind=loc.kind, location=loc.uri, read_only=loc.read_only, exists=False
        )
        try:
            if await anyio.to_thread.run_sync(exists, loc):
                db = await ws.pool.open_one(loc)
                row.exists = True
                counts = await asyncio.gather(reads.count_documents(db), reads.count_chunks(db))
                row.documents, row.chunks = counts
                row.embedder = db.embedder.name
                row.published = published_info(db.meta)
        except (DatabaseError, InputError) as exc:  # InputError: a configured folder of other files
            row.error = str(exc)
        return row

    return await concurrently([partial(describe, loc) for loc in locations])
