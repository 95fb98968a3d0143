"""What each command does, callable from Python without the CLI: one async function per command.

The reading ones live in queries.py (importing none of the write path) and are named here too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio.to_thread

from haiku_cli.config.resolved import ResolvedConfig, resolved_config
from haiku_cli.databases import references
from haiku_cli.databases.freshness import summarised_sources
from haiku_cli.databases.log_results import (
    DatabaseHistory,
    ForgottenSource,
    SourceList,
    SyncRun,
)
from haiku_cli.databases.queries import get_document as get_document
from haiku_cli.databases.queries import info as info
from haiku_cli.databases.queries import list_documents as list_documents
from haiku_cli.databases.queries import overview as overview
from haiku_cli.databases.queries import search as search
from haiku_cli.databases.queries import search_hits as search_hits
from haiku_cli.databases.reading import in_thread, read_one
from haiku_cli.databases.results import (
    DeletedDocument,
    RebuildReport,
    VacuumReport,
)
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.ingest import reports
from haiku_cli.store import document_writes, maintenance, reads
from haiku_cli.store.adding import adding, writing
from haiku_cli.store.database import Database, exists
from haiku_cli.store.document_parts import parts_of
from haiku_cli.store.handle import read_errors as _read_errors
from haiku_cli.store.location import Location

if TYPE_CHECKING:
    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.cluster import RayEngine
    from haiku_cli.store.source_tables import RememberedSource


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
    from haiku_cli.ingest.source_walk import FileChoice, as_source, display_path

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


async def delete_document(ws: Workspace, location: Location, document_id: str) -> DeletedDocument:
    """`haiku delete`: remove a document (named as `get` takes it) and its chunks together."""
    db = await ws.pool.open_one(location, writable=True)
    async with writing(db, "delete") as write:
        doc = await references.document(db, location, document_id)
        found = doc.id
        write.operation = f"delete {found} ({doc.title or doc.uri or 'untitled'})"
        chunks = len(await reads.chunks_of(db, found))
        # A mail's attachments, read out of it, go with it: no sync would ever remove them otherwise.
        parts = await anyio.to_thread.run_sync(lambda: list(parts_of(db, [found])))
        await anyio.to_thread.run_sync(lambda: document_writes.delete_documents(db, [found, *parts]))
    ws.pool.forget(location)
    return DeletedDocument(database=db.name, document=doc.summary(), chunks=chunks, parts=len(parts))


async def history(ws: Workspace, location: Location) -> DatabaseHistory:
    """`haiku history`: the write commands that made the database, and its table versions, newest first."""
    from haiku_cli.store.command_log import WriteRecord, write_log

    async def read(db: Database) -> tuple[list[maintenance.TableVersion], list[WriteRecord]]:
        return await maintenance.history(db), write_log(db)

    versions, writes_made = await read_one(ws.pool, location, read)
    return DatabaseHistory(database=location.name, writes=writes_made, versions=versions)


async def vacuum(ws: Workspace, location: Location) -> VacuumReport:
    """`haiku vacuum`: compact, drop old versions, upgrade an older layout in place, and say where chunks
    written before schema 3 stand where their text is found in their document."""
    from haiku_cli.ingest.chunk_places import fill_places

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
    from haiku_cli.ingest import rechunking

    db = await ws.pool.open_one(location, writable=True)
    # Always logged: the rebuilt chunks table is a new one, whose version may equal the old table's.
    async with writing(db, "rebuild", always_logged=True):
        done = await rechunking.rebuild(db, ws.embedder, progress)
    ws.pool.forget(location)
    return RebuildReport(
        database=db.name, chunks=done.chunks, kept_chunk_ids=done.kept_chunk_ids, embedder=ws.embedder.name
    )


def show_config(ws: Workspace) -> ResolvedConfig:
    """`haiku config show`: the config file, the data dir and the settings in effect."""
    return resolved_config(ws.settings, ws.config_file)


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
    from haiku_cli.ingest.source_walk import as_source
    from haiku_cli.store import source_tables
    from haiku_cli.store.transaction import atomic_write, storage_errors

    key = source_key(as_source(source.strip()))
    db = await ws.pool.open_one(location, writable=True)

    def forget(db: Database) -> ForgottenSource:
        from haiku_cli.store.source_dirs import forget_dirs

        known = {s.source for s in source_tables.read_sources(db)}
        if key not in known:
            raise InputError(
                f"database '{db.name}' remembers no source {key}; haiku sources{_option(location)} lists them"
            )
        ids = list(dict.fromkeys(s.document_id for s in source_tables.file_states(db, key)))
        doomed = (
            [] if keep_documents else [i for i in ids if i not in source_tables.claimed(db, ids, besides=key)]
        )
        kept = len(ids) - len(doomed)
        doomed += list(parts_of(db, doomed)) if doomed else []  # a mail's attachments go with it
        with atomic_write(db), storage_errors(db, "cannot be written"):
            source_tables.forget(db, key)
            forget_dirs(db, key)
            if doomed:
                document_writes.delete_documents(db, doomed)
        maintenance.after_write(db)
        return ForgottenSource(
            database=db.name, source=key, deleted_documents=len(doomed), kept_documents=kept
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
    from haiku_cli.store.source_tables import read_sources

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
    keep_listing: bool = False,
) -> reports.SourceSync:
    """Sync one remembered source of an open database, holding its writer lock meanwhile (see `sync`;
    `keep_listing`: ingest/sync.py)."""
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
            keep_listing=keep_listing,
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
