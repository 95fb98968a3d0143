"""What each command does, callable from Python without the CLI: one async function per command."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, Literal

import anyio.to_thread
from pydantic import BaseModel

from haiku_cli.databases import fanout
from haiku_cli.databases.concurrency import in_threads
from haiku_cli.databases.selection import Selection, configured
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import DatabaseError, InputError
from haiku_cli.ingest import pipeline
from haiku_cli.search.candidates import SearchType
from haiku_cli.search.hits import SearchHit
from haiku_cli.store import maintenance, reads
from haiku_cli.store.database import Database, exists, open_database
from haiku_cli.store.location import Location
from haiku_cli.store.records import ChunkRecord, DocumentRecord
from haiku_cli.store.writes import delete_document


async def _writable(ws: Workspace, location: Location) -> Database:
    db = await ws.pool.open_one(location, writable=True, create_with=ws.embedder_spec())
    db.check_embedder(ws.embedder_spec())
    return db


async def _readable(ws: Workspace, location: Location) -> Database:
    return await ws.pool.open_one(location)


async def add_text(
    ws: Workspace, location: Location, text: str, *, title: str | None, metadata: dict[str, Any]
) -> pipeline.IngestReport:
    """`haiku add`: store a piece of text as a document."""
    db = await _writable(ws, location)
    return await pipeline.add_text(db, ws.embedder, text, title=title, metadata=metadata)


async def add_sources(
    ws: Workspace,
    location: Location,
    sources: Sequence[str],
    *,
    title: str | None,
    metadata: dict[str, Any],
    progress: pipeline.Progress | None = None,
) -> pipeline.IngestReport:
    """`haiku add-src`: add files, directories and URLs; the report says which failed."""
    if not sources:
        raise InputError("name at least one file, directory or URL to add")
    db = await _writable(ws, location)
    return await pipeline.add_sources(
        db, ws.embedder, sources, title=title, metadata=metadata, progress=progress
    )


async def search(
    ws: Workspace,
    selection: Selection,
    query: str,
    *,
    search_type: SearchType | Literal["auto"] = "hybrid",
    limit: int | None = None,
    document_filter: str | None = None,
) -> list[SearchHit]:
    """`haiku search`: one fused, labelled ranking over the selection."""
    return await fanout.search(
        ws.pool,
        selection,
        query,
        embed_query=ws.embed_query,
        embedder_spec=ws.embedder_spec,
        search_type=search_type,
        limit=limit or ws.settings.search.limit,
        document_filter=document_filter,
        vector_weight=ws.settings.search.vector_weight,
    )


async def list_documents(
    ws: Workspace, location: Location, *, document_filter: str | None, limit: int, offset: int = 0
) -> list[DocumentRecord]:
    """`haiku list`: documents, oldest first."""
    db = await _readable(ws, location)
    return await anyio.to_thread.run_sync(
        lambda: reads.list_documents(db, where=document_filter, limit=limit, offset=offset)
    )


class DocumentWithChunks(BaseModel):
    """A document with its chunks, as `haiku get` shows it."""

    database: str
    document: DocumentRecord
    chunks: list[ChunkRecord]


async def get_document(ws: Workspace, location: Location, document_id: str) -> DocumentWithChunks:
    """`haiku get`: one document with its chunks."""
    db = await _readable(ws, location)
    doc = await anyio.to_thread.run_sync(lambda: reads.get_document(db, document_id))
    if doc is None:
        raise InputError(f"no document with id {document_id} in database '{db.name}'")
    chunks = await anyio.to_thread.run_sync(lambda: reads.chunks_of(db, document_id))
    return DocumentWithChunks(database=db.name, document=doc, chunks=chunks)


async def delete(ws: Workspace, location: Location, document_id: str) -> DocumentRecord:
    """`haiku delete`: remove a document and its chunks together."""
    db = await ws.pool.open_one(location, writable=True)
    doc = await anyio.to_thread.run_sync(lambda: reads.get_document(db, document_id))
    if doc is None:
        raise InputError(f"no document with id {document_id} in database '{db.name}'")
    await anyio.to_thread.run_sync(lambda: delete_document(db, document_id))
    return doc


async def info(ws: Workspace, location: Location) -> maintenance.DatabaseInfo:
    """`haiku info`: counts, size, embedder, schema, versions, indexes."""
    db = await _readable(ws, location)
    return await anyio.to_thread.run_sync(lambda: maintenance.database_info(db))


async def history(ws: Workspace, location: Location) -> list[maintenance.TableVersion]:
    """`haiku history`: table versions, newest first."""
    db = await _readable(ws, location)
    return await anyio.to_thread.run_sync(lambda: maintenance.history(db))


async def vacuum(ws: Workspace, location: Location) -> tuple[int | None, int | None]:
    """`haiku vacuum`: compact and drop old versions."""
    db = await ws.pool.open_one(location, writable=True)
    return await anyio.to_thread.run_sync(lambda: maintenance.vacuum(db))


async def rebuild(ws: Workspace, location: Location, progress: pipeline.Progress | None = None) -> int:
    """`haiku rebuild`: re-chunk and re-embed everything with the configured embedder, all-or-nothing."""
    db = await ws.pool.open_one(location, writable=True)
    count = await pipeline.rebuild(db, ws.embedder, progress)
    ws.pool.forget(location)
    return count


class DatabaseOverview(BaseModel):
    """One line of `haiku databases`."""

    name: str
    kind: str
    exists: bool
    documents: int | None = None
    chunks: int | None = None
    embedder: str | None = None
    location: str | None = None
    error: str | None = None


async def overview(ws: Workspace, *, show_locations: bool = False) -> list[DatabaseOverview]:
    """`haiku databases`: every configured database, opened concurrently."""
    known = configured(ws.settings)

    def describe(loc: Location) -> DatabaseOverview:
        row = DatabaseOverview(
            name=loc.name, kind=loc.kind, exists=False, location=loc.uri if show_locations else None
        )
        try:
            if exists(loc):
                db = open_database(loc)
                row.exists = True
                row.documents, row.chunks = reads.count_documents(db), reads.count_chunks(db)
                row.embedder = db.embedder.name
        except DatabaseError as exc:
            row.error = str(exc)
        return row

    return await in_threads([partial(describe, loc) for loc in known.values()])
