"""What each command does, callable from Python without the CLI: one async function per command."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio.to_thread

from haiku_cli.config.resolved import ResolvedConfig, resolved_config
from haiku_cli.databases import fanout, references
from haiku_cli.databases.concurrency import concurrently
from haiku_cli.databases.freshness import RemoteCheck, check_documents, summarised_sources
from haiku_cli.databases.reading import in_thread, read_one
from haiku_cli.databases.results import (
    DatabaseHistory,
    DatabaseOverview,
    DeletedDocument,
    DocumentList,
    DocumentWithChunks,
    ForgottenSource,
    RebuildReport,
    SearchResults,
    SourceList,
    SyncRun,
    VacuumReport,
)
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import DatabaseError, InputError
from haiku_cli.ingest import reports
from haiku_cli.search.candidates import SearchType
from haiku_cli.search.hits import SearchHit, best_per_document
from haiku_cli.store import maintenance, reads, writes
from haiku_cli.store.adding import adding, writing
from haiku_cli.store.database import Database, exists
from haiku_cli.store.handle import read_errors as _read_errors
from haiku_cli.store.location import Location
from haiku_cli.store.pictures import pictures_of
from haiku_cli.store.published import published_info

if TYPE_CHECKING:
    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.cluster import RayEngine
    from haiku_cli.store.sources import RememberedSource


async def _writable(ws: Workspace, location: Location) -> Database:
    spec = await ws.resolve_embedder_spec()
    db = await ws.pool.open_one(location, writable=True, create_with=spec)
    db.check_embedder(spec)
    return db


async def add_text(
    ws: Workspace, location: Location, text: str, *, title: str | None, metadata: dict[str, Any]
) -> reports.IngestReport:
    """`haiku add`: store a piece of text as a document."""
    from haiku_cli.ingest import pipeline  # the ingest path (file walking, ignore rules) loads on use

    if not text.strip():
        raise InputError("the text to add is empty")  # checked before the database is created
    limit_mb = ws.settings.ingest.max_text_mb
    if len(text) > limit_mb * 2**20:  # the limit a file's text has
        from haiku_cli.ingest.convert.limits import megabytes

        raise InputError(
            f"the text to add is {megabytes(len(text))}, over the limit of {limit_mb:g} MB; "
            "raise [ingest] max_text_mb in the config file to add it"
        )
    gist = " ".join(text.split())
    return await _adding(
        ws,
        location,
        lambda db: pipeline.add_text(db, ws.embedder, text, title=title, metadata=metadata),
        f"add {title!r}" if title else f"add {gist[:40]!r}" + ("…" if len(gist) > 40 else ""),
    )


async def add_sources(
    ws: Workspace,
    location: Location,
    sources: Sequence[str],
    *,
    title: str | None,
    metadata: dict[str, Any],
    progress: reports.Progress | None = None,
    follow_symlinks: bool | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    on_note: Callable[[str], None] = lambda _: None,
) -> reports.IngestReport:
    """`haiku add-src`: add files, directories and URLs; the report says which failed or were skipped.

    `include`/`exclude` are gitignore-style globs choosing the files of folders; an included file of a
    suffix haiku does not know is read as plain text. `engine="ray"` reads, chunks and embeds them on a
    Ray cluster (`ray_address`, else `[ray] address`) unless they are under `[ray] min_mb`, which
    `on_note` is told.
    """
    from haiku_cli.ingest import pipeline
    from haiku_cli.ingest.kinds import kind_of, unread_scheme
    from haiku_cli.ingest.objects import ObjectStores
    from haiku_cli.ingest.sources import FileChoice, as_source, display_path

    # Checked before the database is opened, so that bad input never creates an empty one.
    if not sources:
        raise InputError("name at least one file, directory or URL to add")
    sources = [as_source(s) for s in sources]
    unread = [reason for reason in map(unread_scheme, sources) if reason]
    if unread:
        raise InputError("\n".join(unread))
    missing = [why for why in (kind_of(s).absent(s) for s in sources) if why is not None]
    if len(missing) == len(sources):
        raise InputError("\n".join(missing))
    cluster = _ray_engine(ws, ray_address, on_note) if engine == "ray" else None
    return await _adding(
        ws,
        location,
        lambda db: pipeline.add_sources(
            db,
            ws.embedder,
            sources,
            title=title,
            metadata=metadata,
            progress=progress,
            follow_symlinks=follow_symlinks,
            limits=ws.settings.ingest,
            choice=FileChoice(include, exclude),
            objects=ObjectStores(ws.settings, db.location.storage_options),
            engine=cluster,
        ),
        "add-src " + " ".join(display_path(s) for s in sources),
    )


def _ray_engine(ws: Workspace, address: str | None, on_note: Callable[[str], None]) -> RayEngine:
    """The Ray engine of an add, checked before any database is opened (ingest/cluster.py)."""
    from haiku_cli.ingest.cluster import ray_engine

    return ray_engine(ws.settings, ws.embedder.name, address=address, note=on_note)


async def _adding(
    ws: Workspace,
    location: Location,
    add: Callable[[Database], Awaitable[reports.IngestReport]],
    operation: str,
) -> reports.IngestReport:
    """Run an add by the store's add protocol: a database it created goes again if nothing was stored."""
    return await adding(
        location,
        partial(_writable, ws, location),
        add,
        stored=lambda report: any(o.status in ("added", "updated") for o in report.outcomes),
        close=partial(ws.pool.forget, location),
        operation=operation,
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


async def search_results(
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
    """`haiku search`: like `search`, but a local database not written yet is skipped and named.

    A set is searched as long as one of its databases exists; object storage is never guessed at, so a
    missing remote database still fails with its name. With `per_document`, each document is one hit (its
    best chunk) and `limit` counts documents.
    """
    # One look at each local folder (object storage is not looked at), done here: handing it to a worker
    # thread would cost far more than the look, a noticeable share of a warm full-text search.
    searched, not_created = searchable(selection)
    find = partial(search, ws, searched, query, search_type=search_type, document_filter=document_filter)
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


async def delete_document(ws: Workspace, location: Location, document_id: str) -> DeletedDocument:
    """`haiku delete`: remove a document (named as `get` takes it) and its chunks together."""
    db = await ws.pool.open_one(location, writable=True)
    async with writing(db, "delete") as write:
        doc = await references.document(db, location, document_id)
        found = doc.id
        write.operation = f"delete {found} ({doc.title or doc.uri or 'untitled'})"
        chunks = len(await reads.chunks_of(db, found))
        await anyio.to_thread.run_sync(lambda: writes.delete_document(db, found))
    ws.pool.forget(location)
    return DeletedDocument(database=db.name, document=doc.summary(), chunks=chunks)


async def info(ws: Workspace, location: Location) -> maintenance.DatabaseInfo:
    """`haiku info`: counts, size, embedder, schema, versions, indexes."""
    return await read_one(ws.pool, location, maintenance.database_info)


async def history(ws: Workspace, location: Location) -> DatabaseHistory:
    """`haiku history`: the write commands that made the database, and its table versions, newest first."""
    from haiku_cli.store.write_log import WriteRecord, write_log

    async def read(db: Database) -> tuple[list[maintenance.TableVersion], list[WriteRecord]]:
        return await maintenance.history(db), write_log(db)

    versions, writes_made = await read_one(ws.pool, location, read)
    return DatabaseHistory(database=location.name, writes=writes_made, versions=versions)


async def vacuum(ws: Workspace, location: Location) -> VacuumReport:
    """`haiku vacuum`: compact, drop old versions, upgrade an older layout in place, and say where chunks
    written before schema 3 stand where their text is found in their document."""
    from haiku_cli.ingest.placing import fill_places

    db = await ws.pool.open_one(location, writable=True)
    async with writing(db, "vacuum", always_logged=True):
        done = await anyio.to_thread.run_sync(lambda: maintenance.vacuum(db, fill_places))
    ws.pool.forget(location)
    before, after, upgraded, placed = done
    return VacuumReport(
        database=db.name,
        size_bytes_before=before,
        size_bytes_after=after,
        upgraded_layout=upgraded,
        placed_chunks=placed,
    )


async def rebuild(
    ws: Workspace, location: Location, progress: reports.Progress | None = None
) -> RebuildReport:
    """`haiku rebuild`: re-chunk and re-embed everything with the configured embedder, all-or-nothing."""
    from haiku_cli.ingest import rebuild as rebuilding

    db = await ws.pool.open_one(location, writable=True)
    # Always logged: the rebuilt chunks table is a new one, whose version may equal the old table's.
    async with writing(db, "rebuild", always_logged=True):
        done = await rebuilding.rebuild(db, ws.embedder, progress)
    ws.pool.forget(location)
    return RebuildReport(
        database=db.name, chunks=done.chunks, kept_chunk_ids=done.kept_chunk_ids, embedder=ws.embedder.name
    )


def show_config(ws: Workspace) -> ResolvedConfig:
    """`haiku config show`: the config file, the data dir and the settings in effect."""
    return resolved_config(ws.settings, ws.config_file)


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


async def list_sources(ws: Workspace, location: Location) -> SourceList:
    """`haiku sources`: the sources a database remembers, with the options each was added with."""

    def read(db: Database) -> SourceList:
        return SourceList(database=db.name, sources=summarised_sources(db))

    return await read_one(ws.pool, location, in_thread(read))


async def forget_source(
    ws: Workspace, location: Location, source: str, *, keep_documents: bool = False
) -> ForgottenSource:
    """`haiku forget-src`: forget a remembered source, deleting its documents unless `keep_documents`.

    A document another remembered source also gave stays either way. All-or-nothing.
    """
    from haiku_cli.ingest.remembering import source_key
    from haiku_cli.ingest.sources import as_source
    from haiku_cli.store import sources
    from haiku_cli.store.transaction import atomic_write, storage_errors

    key = source_key(as_source(source.strip()))
    db = await ws.pool.open_one(location, writable=True)

    def forget(db: Database) -> ForgottenSource:
        known = {s.source for s in sources.read_sources(db)}
        if key not in known:
            raise InputError(
                f"database '{db.name}' remembers no source {key}; haiku sources{_option(location)} lists them"
            )
        ids = list(dict.fromkeys(s.document_id for s in sources.file_states(db, key)))
        doomed = [] if keep_documents else [i for i in ids if i not in sources.claimed(db, ids, besides=key)]
        with atomic_write(db), storage_errors(db, "cannot be written"):
            sources.forget(db, key)
            if doomed:
                writes.delete_documents(db, doomed)
        maintenance.after_write(db)
        return ForgottenSource(
            database=db.name, source=key, deleted_documents=len(doomed), kept_documents=len(ids) - len(doomed)
        )

    try:
        async with writing(db, f"forget-src {key}" + (" --keep-documents" if keep_documents else "")):
            return await anyio.to_thread.run_sync(forget, db)
    finally:
        ws.pool.forget(location)


def _option(location: Location) -> str:
    return f" {location.chosen_by}" if location.chosen_by else ""


async def sync(
    ws: Workspace,
    locations: Sequence[Location],
    *,
    progress: reports.Progress | None = None,
    on_source: Callable[[reports.SourceSync], None] | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    on_note: Callable[[str], None] = lambda _: None,
) -> SyncRun:
    """`haiku sync`: read every remembered source of each database again and bring its documents up to date.

    Each source is one all-or-nothing write under the writer lock (taken per source, so other writers
    get their turn between sources); `on_source` hears each source's result as it is done. `engine="ray"`
    reads, chunks and embeds what changed on a Ray cluster, as `add_sources` does.
    """
    cluster = _ray_engine(ws, ray_address, on_note) if engine == "ray" else None
    run = SyncRun(databases=[])
    for location in locations:
        report = reports.SyncReport(database=location.name)
        run.databases.append(report)
        db = await ws.pool.open_one(location, writable=True)
        try:
            for source in await anyio.to_thread.run_sync(remembered_sources, db):
                done = await sync_source(ws, db, source, progress=progress, engine=cluster)
                report.sources.append(done)
                if on_source is not None:
                    on_source(done)
        finally:
            ws.pool.forget(location)
    return run


def remembered_sources(db: Database) -> list[RememberedSource]:
    """The sources an open database remembers (read errors as one line naming it)."""
    from haiku_cli.store.sources import read_sources

    with _read_errors(db):
        return read_sources(db)


async def sync_source(
    ws: Workspace,
    db: Database,
    source: RememberedSource,
    *,
    scope: Sequence[Path] | None = None,
    progress: reports.Progress | None = None,
    engine: RayEngine | None = None,
) -> reports.SourceSync:
    """Sync one remembered source of an open database, holding its writer lock meanwhile (see `sync`)."""
    from haiku_cli.ingest import sync as syncing
    from haiku_cli.ingest.objects import ObjectStores

    async def embedder() -> Embedder:
        db.check_embedder(await ws.resolve_embedder_spec())
        return ws.embedder

    async with writing(db, f"sync {source.source}"):
        current = {s.source: s for s in await anyio.to_thread.run_sync(remembered_sources, db)}
        if source.source not in current:  # forgotten meanwhile
            return reports.SourceSync(source=source.source, kind=source.kind)
        return await syncing.sync_source(
            db,
            embedder,
            current[source.source],
            limits=ws.settings.ingest,
            progress=progress,
            scope=scope,
            objects=ObjectStores(ws.settings, db.location.storage_options),
            engine=engine,
        )


def writable_databases(ws: Workspace) -> list[Location]:
    """`--all`: every configured database that exists and is not configured read_only (none is an error)."""
    found = [loc for loc in ws.locations.values() if not loc.read_only and exists(loc)]
    if not found:
        raise InputError(
            "--all found no configured database that exists and is not read_only; "
            "add sources to one first (haiku add-src PATH)"
        )
    return found
