"""Adding sources to one database: convert, skip the unchanged, chunk, embed, write in batches."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio.to_thread

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import DatabaseError, HaikuError, InputError
from haiku_cli.ingest.chunking import Chunk, chunk_document
from haiku_cli.ingest.document import ConvertedDocument
from haiku_cli.ingest.embedding import BATCH_CHUNKS, embed_chunks
from haiku_cli.ingest.objects import ObjectFile, ObjectStores, is_object_uri
from haiku_cli.ingest.reports import IngestReport, NoProgress, Progress, SourceOutcome, Status
from haiku_cli.ingest.shown import drop_shown_pictures
from haiku_cli.ingest.sources import FileChoice, TextFile
from haiku_cli.ingest.stages import hand_on, two_stages
from haiku_cli.ingest.stored import content_hash, picture_records, stored_content
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.heap import return_large_buffers
from haiku_cli.store.indexes import vector_rows_to_index
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.reads import count_documents, find_by_hash, find_by_uri, stored_hashes, stored_uris
from haiku_cli.store.records import DocumentRecord, DocumentWrite, NewChunk, PictureRecord
from haiku_cli.store.transaction import atomic_write, storage_errors
from haiku_cli.store.writes import HeldWrites, new_id

if TYPE_CHECKING:
    import numpy as np
    from anyio.streams.memory import MemoryObjectSendStream

    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.cluster import RayEngine
    from haiku_cli.ingest.convert.url import Fetched
    from haiku_cli.ingest.remembering import Seen
    from haiku_cli.store.kept import Kept, KeptIds
    from haiku_cli.store.sources import RememberedSource, SourceKind


@dataclass
class _Part:
    """Consecutive chunks of one queued document; its first part also writes the document itself."""

    document: DocumentRecord
    chunks: list[Chunk]
    replaces: DocumentRecord | None
    first: bool
    outcome: SourceOutcome
    # The document's stored vectors may stand in for identical chunks' (same embedder, title, text).
    reuse_vectors: bool = False
    pictures: list[PictureRecord] = field(default_factory=list)  # written with the first part
    last: bool = False  # the document's last part: once it is written, the document is whole
    vectors: np.ndarray | None = None  # one row per chunk, made by a cluster's worker

    @property
    def stored(self) -> DocumentRecord:
        """The document under the id it is stored with (a replaced document keeps its id)."""
        if self.replaces is None:
            return self.document
        return self.document.model_copy(update={"id": self.replaces.id})


@dataclass(frozen=True)
class Prepared:
    """One item read, and (unless its content is stored already) chunked and embedded, by a cluster's
    worker; `error` when it could not be read (an input error is reported, any other stops the add)."""

    position: int
    label: str
    seen: Seen | None = None
    document: ConvertedDocument | None = None
    chunks: list[Chunk] | None = None  # None: left to the writer (its content hash was stored already)
    vectors: np.ndarray | None = None  # one per chunk, of its `embedding_text` under `title`
    title: str | None = None  # the document title the vectors were made with
    error: HaikuError | None = None
    # A new document whose chunks the worker wrote as fragments: the id their rows carry, and how many.
    document_id: str | None = None
    written: int = 0


class Ingestor:
    """Adds converted documents to one database, batching the embedding and the writes.

    Inside `pipelined()`, batches flow through two stages that run while the caller converts and chunks
    the next sources: the embedder, and the writer, which stores batch N while batch N+1 embeds.
    """

    def __init__(self, db: Database, embedder: Embedder, progress: Progress | None = None) -> None:
        return_large_buffers()  # an add's batches' buffers do not pile up in the heap (store/heap.py)
        self.db = db
        self.embedder = embedder
        self.progress = progress or NoProgress()
        self.report = IngestReport(database=db.name)
        self.held = HeldWrites(db)  # batches are committed a few thousand chunks at a time
        self._batch: list[_Part] = []
        self._batch_chunks = 0
        # Queued documents are reported about every BATCH_CHUNKS chunks, as they always were.
        self._unreported: list[SourceOutcome] = []
        self._unreported_chunks = 0
        # uri or content hash -> (document id, content hash) of each document queued by this add
        self._queued: dict[str, tuple[str, str]] = {}
        # id -> stored chunks of the updated documents in the batch being embedded (read before any
        # part of them is written), kept while a document goes on into the next batch
        self._kept: dict[str, KeptIds] = {}
        self._empty_before: bool | None = None  # whether the database held no document when this add began
        # A sync's documents whose file left the source, by content hash; a new file with the same content
        # takes one over (`moved`: its id -> the uri it had), so a renamed or moved file keeps its id.
        self.moved_from: dict[str, DocumentRecord] = {}
        self.moved: dict[str, str] = {}
        self._to_embed: MemoryObjectSendStream[list[_Part]] | None = None
        # Ids of the new documents this add stores whose chunks a cluster wrote as fragments; while those
        # are not committed (at the end of the add), a document written is not whole: no keep points.
        self.in_fragments: set[str] = set()
        self.keep_points = True
        self.position = 0  # of the source being handled, among those given and found (see SourceOutcome)

    async def add(
        self,
        doc: ConvertedDocument,
        *,
        source: str,
        title: str | None = None,
        metadata: dict[str, Any],
        prepared: Prepared | None = None,
    ) -> None:
        """Queue one converted document (a no-op when its content is unchanged).

        `prepared`: its chunks and their vectors, made elsewhere from this document (used when they
        were made under the title it is stored with; else it is chunked and embedded here).
        """
        content = stored_content(doc)
        note = "; ".join(doc.notes) or None
        digest = content_hash(content, [p.data for p in doc.pictures])
        uri = doc.uri or None
        queued = self._queued.get(uri or digest)
        if queued is not None:  # the same source twice in one add (e.g. a folder and a file in it)
            if queued[1] == digest:
                self.report.outcomes.append(
                    self._outcome(source=source, status="unchanged", document_id=queued[0], note=note)
                )
            else:
                self.fail(source, f"{source}: changed while it was being added; add it again")
            return
        existing = await anyio.to_thread.run_sync(self._stored, uri, digest)
        if existing is None and uri is not None and digest in self.moved_from:
            # The file of a document that left its source, found under a new name: a rename keeps the id.
            existing = self.moved_from.pop(digest)
            self.moved[existing.id] = existing.uri or ""
        if (
            existing is not None
            and existing.uri == uri
            and existing.content_hash == digest
            and (title is None or title == existing.title)
            and (not metadata or metadata == existing.metadata)
        ):
            self.report.outcomes.append(
                self._outcome(source=source, status="unchanged", document_id=existing.id, note=note)
            )
            return
        if prepared is not None and prepared.document_id is not None:
            if existing is not None or prepared.title != (title or doc.title):
                # A worker writes a document's chunks only when no document is stored under its uri, which
                # is so while this add holds the writer lock.
                raise DatabaseError(
                    f"database '{self.db.name}': {source} was stored while the cluster prepared it; "
                    "run the add again"
                )
            self._queue_written(doc, prepared, source, metadata, (content, digest), note)
            await self._after_queue()
            return
        vectors: np.ndarray | None = None
        if prepared is not None and prepared.chunks is not None and prepared.title == (title or doc.title):
            chunks, vectors = prepared.chunks, prepared.vectors
        else:
            chunks = await anyio.to_thread.run_sync(
                lambda: chunk_document(doc, self.embedder.count_tokens, max_tokens=self.embedder.max_tokens)
            )
        if not chunks:
            self.report.outcomes.append(
                self._outcome(source=source, status="failed", error=f"{source}: no text to index")
            )
            return
        now = datetime.now(UTC)
        record = DocumentRecord(
            id=new_id(),
            uri=uri,
            title=title or doc.title,
            # Given --meta replaces what is stored; none keeps it.
            metadata=metadata or (existing.metadata if existing is not None else {}),
            content=content,
            content_hash=digest,
            created_at=now,
            updated_at=now,
        )
        status: Status = "updated" if existing is not None else "added"
        document_id = existing.id if existing else record.id
        outcome = self._outcome(
            source=source, status=status, document_id=document_id, chunks=len(chunks), note=note
        )
        reuse_vectors = False
        if existing is not None:
            outcome.kept_chunk_ids = 0
            # A chunk's vector embeds the title too; the stored vectors of a very long document are not
            # all read at once (memory holds a few batches of vectors, never a whole big file).
            reuse_vectors = (
                record.title == existing.title
                and len(chunks) <= _REUSE_VECTORS_UP_TO
                and self.db.meta.get("embedder_name") == self.embedder.name
            )
        self._queued[uri or digest] = (document_id, digest)
        self._unreported.append(outcome)
        self._unreported_chunks += len(chunks)
        self.progress.add_total(len(chunks))
        start = 0
        while start < len(chunks):
            part = chunks[start : start + BATCH_CHUNKS - self._batch_chunks]
            pictures = picture_records(doc) if start == 0 else []
            last = start + len(part) == len(chunks)
            given = vectors[start : start + len(part)] if vectors is not None else None
            self._batch.append(
                _Part(record, part, existing, start == 0, outcome, reuse_vectors, pictures, last, given)
            )
            self._batch_chunks += len(part)
            start += len(part)
            if self._batch_chunks >= BATCH_CHUNKS:
                await self._send_batch()
        if self._unreported_chunks >= BATCH_CHUNKS:
            self._report_queued()

    def _queue_written(
        self,
        doc: ConvertedDocument,
        prepared: Prepared,
        source: str,
        metadata: dict[str, Any],
        hashed: tuple[str, str],
        note: str | None,
    ) -> None:
        """Queue a new document whose chunks a worker wrote as fragments: only its row and pictures are
        written here, under the id those chunks carry (`hashed`: its stored content and content hash)."""
        assert prepared.document_id is not None
        content, digest = hashed
        now = datetime.now(UTC)
        record = DocumentRecord(
            id=prepared.document_id,
            uri=doc.uri or None,
            title=prepared.title,
            metadata=metadata,
            content=content,
            content_hash=digest,
            created_at=now,
            updated_at=now,
        )
        outcome = self._outcome(
            source=source, status="added", document_id=record.id, chunks=prepared.written, note=note
        )
        self._queued[doc.uri or digest] = (record.id, digest)
        self.in_fragments.add(record.id)
        self._unreported.append(outcome)
        self._unreported_chunks += prepared.written
        self.progress.add_total(prepared.written)
        self.progress.advance(prepared.written)  # embedded by the cluster
        part = _Part(record, [], None, True, outcome, pictures=picture_records(doc), last=True)
        self._batch.append(part)
        # Counted by its chunks: a batch holds as many documents as it would with their chunks.
        self._batch_chunks += prepared.written

    async def _after_queue(self) -> None:
        if self._batch_chunks >= BATCH_CHUNKS:
            await self._send_batch()
        if self._unreported_chunks >= BATCH_CHUNKS:
            self._report_queued()

    def _stored(self, uri: str | None, digest: str) -> DocumentRecord | None:
        """The stored document this one would replace; a database empty when the add began has none to
        look up (it is locked for this add), which saves a query per source on a first add."""
        if self._empty_before is None:
            self._empty_before = wait(count_documents(self.db)) == 0
        if self._empty_before:
            return None
        return wait(find_by_uri(self.db, uri) if uri else find_by_hash(self.db, digest))

    def _outcome(self, **fields: Any) -> SourceOutcome:
        return SourceOutcome.at(self.position, **fields)

    def fail(self, source: str, error: str) -> None:
        """Record a source that could not be converted."""
        self.report.outcomes.append(self._outcome(source=source, status="failed", error=error))

    def skip(self, source: str, reason: str) -> None:
        """Record a source left out on purpose, with the reason as its note."""
        self.report.outcomes.append(self._outcome(source=source, status="skipped", note=reason))

    async def flush(self) -> None:
        """Embed, write and commit everything queued (inside `pipelined()`: hand it to the stages)."""
        self._report_queued()
        await self._send_batch()
        await self._send([])  # the end: the writer commits what it holds, in its own stage

    def _report_queued(self) -> None:
        # Each outcome is final once its document is queued: a later failure undoes the whole add.
        self.report.outcomes.extend(self._unreported)
        self._unreported, self._unreported_chunks = [], 0

    async def _send_batch(self) -> None:
        batch, self._batch, self._batch_chunks = self._batch, [], 0
        if batch:
            await self._send(batch)

    async def _send(self, batch: list[_Part]) -> None:
        if self._to_embed is not None:
            await hand_on(self._to_embed, batch)
        else:
            await self._write(await self._embed(batch))

    @asynccontextmanager
    async def pipelined(self) -> AsyncIterator[None]:
        """Run the embedder and the writer as stages beside the caller; on exit, flush and wait for both.

        At most three batches are held (being built, being embedded, being written), so memory stays
        bounded however many sources there are; a failure anywhere is raised as itself (`two_stages`).
        """
        async with two_stages(self._embed, self._write) as to_embed:
            self._to_embed = to_embed
            try:
                yield
                await self.flush()
            finally:
                self._to_embed = None

    async def _embed(self, batch: list[_Part]) -> _Embedded:
        if not batch:
            return [], [], True
        titled = [(p.document.title, c) for p in batch for c in p.chunks]
        kept = await self._kept_chunks(batch)
        given = [v for p in batch for v in (p.vectors if p.vectors is not None else [None] * len(p.chunks))]
        embedded = iter(await embed_chunks(self.embedder, titled, self.progress.advance, kept, given))
        writes: list[DocumentWrite] = []
        more: list[tuple[DocumentRecord, NewChunk]] = []
        for p in batch:
            chunks = [next(embedded) for _ in p.chunks]
            if p.first:
                writes.append(
                    DocumentWrite(
                        document=p.document, chunks=chunks, replaces=p.replaces, pictures=p.pictures
                    )
                )
            else:
                more.extend((p.stored, c) for c in chunks)
        # Batches are written in order, so only the batch's last document may go on into the next one.
        return writes, more, batch[-1].last

    async def _kept_chunks(self, batch: list[_Part]) -> list[Kept | None]:
        """Per chunk of the batch, the stored chunk of its updated document it is identical to (or None).

        The stored chunks of the documents updated from this batch on are read in one query, before any
        part of them is written (this stage runs ahead of the writer, never behind it).
        """
        from haiku_cli.store.kept import KeptIds

        updated = [p for p in batch if p.first and p.replaces is not None]
        going_on = {p.replaces.id: self._kept[p.replaces.id] for p in batch if p.replaces and not p.first}
        if updated:
            ids = [p.replaces.id for p in updated if p.replaces]
            reuse = {p.replaces.id for p in updated if p.replaces and p.reuse_vectors}
            read = await anyio.to_thread.run_sync(lambda: KeptIds(self.db, ids, vectors_of=reuse))
            going_on.update(dict.fromkeys(ids, read))
        self._kept = going_on
        out: list[Kept | None] = []
        for p in batch:
            if p.replaces is None:
                out.extend([None] * len(p.chunks))
                continue
            stored = self._kept[p.replaces.id]
            for c in p.chunks:
                kept = stored.take(p.replaces.id, c.text, c.heading_path, c.pages)
                out.append(kept)
                p.outcome.kept_chunk_ids = (p.outcome.kept_chunk_ids or 0) + (kept is not None)
        return out

    async def _write(self, embedded: _Embedded) -> None:
        writes, more, whole = embedded

        def write() -> None:
            # A commit ending where every document held is whole is a keep point (HeldWrites).
            self.held.keeps = self.keep_points
            self.held.write(writes, more, boundary=whole)
            if not writes and not more:
                self.held.commit()  # the empty batch `flush` sends last

        await anyio.to_thread.run_sync(write)


# Updated documents of up to this many chunks reuse the stored vectors of their identical chunks.
_REUSE_VECTORS_UP_TO = 4 * BATCH_CHUNKS
# What an add reads: a URL, a file, a file of another suffix read as text, or an object on object storage.
Item = str | Path | TextFile | ObjectFile
# A batch ready to write: whole or first parts of documents, further chunks of documents written before,
# and whether every document in it is whole once it is written.
_Embedded = tuple[list[DocumentWrite], list[tuple[DocumentRecord, NewChunk]], bool]


async def add_text(
    db: Database, embedder: Embedder, text: str, *, title: str | None, metadata: dict[str, Any]
) -> IngestReport:
    """Add a piece of text as a document."""
    from haiku_cli.ingest.convert import convert_text

    if not text.strip():
        raise InputError("the text to add is empty")
    ingestor = Ingestor(db, embedder)
    with atomic_write(db):
        await ingestor.add(convert_text(text, title=title), source="<text>", title=title, metadata=metadata)
        await ingestor.flush()
    await anyio.to_thread.run_sync(after_write, db)
    return ingestor.report


async def add_sources(
    db: Database,
    embedder: Embedder,
    sources: Sequence[str],
    *,
    title: str | None,
    metadata: dict[str, Any],
    progress: Progress | None = None,
    follow_symlinks: bool | None = None,
    limits: IngestSettings | None = None,
    choice: FileChoice | None = None,
    objects: ObjectStores | None = None,
    engine: RayEngine | None = None,
) -> IngestReport:
    """Add files, directories (recursively), URLs and objects or prefixes on object storage (`objects`
    reads those); unreadable sources are reported, the rest added. With an `engine`, a cluster reads,
    chunks and embeds them (unless they are too few to be worth it), and this process writes.

    Symlinks leading out of a directory are skipped unless `follow_symlinks` (None: as the source is
    remembered, else skipped); files over `limits` are reported as failed; `choice` (--include/--exclude)
    picks the files of folders (without it, a source added again keeps the rules it is remembered with).
    What folders hold and is not read, and stored files that left them, are listed in the report. Each
    source found is remembered with these options (`sync` reads it again). The whole add is one
    all-or-nothing write: a
    model or database failure, Ctrl-C or a kill leaves the database as it was before the command.
    """
    from haiku_cli.ingest.remembering import remembered, source_key
    from haiku_cli.ingest.reports import LeftOut
    from haiku_cli.ingest.sources import SkippedSource, display_path, is_url, iter_source_files
    from haiku_cli.store.sources import prepare

    given = choice or FileChoice()
    # A source added again without --include/--exclude (or --[no-]follow-symlinks) keeps what it was
    # remembered with: a file only they brought in stays (a later sync would otherwise delete it).
    before = await anyio.to_thread.run_sync(_remembered_options, db)
    kept_rules = {} if given.include or given.exclude else before.rules
    items: list[tuple[int, Item]] = []  # with their positions among the sources given and found
    owners: dict[int, str] = {}  # position -> the remembered source the item came from
    kept: list[RememberedSource] = []
    ingestor = Ingestor(db, embedder, progress)
    positions = itertools.count()
    folders: list[Path] = []
    object_folders: dict[str, set[str]] = {}  # prefix -> every object its listing holds
    for source in sources:
        ingestor.position = next(positions)
        choice = kept_rules.get(source_key(source), given)
        if is_object_uri(source):
            listed = await _list_objects(ingestor, source, objects, choice, positions, engine)
            if listed is not None:
                kind, found, listed_uris = listed
                if kind == "folder":
                    object_folders[source] = listed_uris
                kept.append(
                    remembered(
                        source,
                        title=title,
                        metadata=metadata,
                        follow_symlinks=False,
                        choice=choice,
                        kind=kind,
                    )
                )
                items.extend(found)
                owners.update(dict.fromkeys((p for p, _ in found), source))
            continue
        if not is_url(source) and not os.path.lexists(Path(source).expanduser()):
            ingestor.fail(display_path(source), f"{display_path(source)}: no such file or directory")
            continue
        follow = before.follows.get(source_key(source), False) if follow_symlinks is None else follow_symlinks
        kept.append(remembered(source, title=title, metadata=metadata, follow_symlinks=follow, choice=choice))
        if is_url(source):
            items.append((ingestor.position, source))
            owners[ingestor.position] = source
            continue
        path = Path(source).expanduser()
        if path.is_dir():
            folders.append(path)
        for entry in iter_source_files(path, follow_symlinks=follow, choice=choice):
            ingestor.position = next(positions)
            if isinstance(entry, LeftOut):
                ingestor.report.left_out.append(entry)
            elif not isinstance(entry, SkippedSource):
                items.append((ingestor.position, entry))
                owners[ingestor.position] = source_key(source)
            elif entry.failed:
                ingestor.fail(entry.source, f"{entry.source}: {entry.reason}")
            else:
                ingestor.skip(entry.source, entry.reason)
    if title is not None and len(items) > 1:
        raise InputError("--title names one document, but the sources hold several; drop --title")
    if folders or object_folders:
        ingestor.report.gone = await anyio.to_thread.run_sync(_gone_from, db, folders, object_folders)
    await anyio.to_thread.run_sync(prepare, db)  # before the journal: the write below may fill them
    on_cluster = engine is not None and engine.worth_it(items)
    fragments = on_cluster and engine is not None and engine.settings.fragments
    with atomic_write(db, fragments=fragments):
        if engine is None or not on_cluster:
            seen = await ingest_items(
                ingestor, items, title=title, metadata=metadata, limits=limits, objects=objects
            )
        else:
            seen = await add_on_cluster(
                ingestor, engine, items, title=title, metadata=metadata, limits=limits, objects=objects
            )
        await anyio.to_thread.run_sync(lambda: remember_outcomes(db, kept, ingestor.report, owners, seen))
    rows, first = await anyio.to_thread.run_sync(vector_rows_to_index, db.chunks)
    if rows and first:
        ingestor.progress.upkeep(f"building the vector index over {rows:,} chunks (once)")
    elif rows:
        ingestor.progress.upkeep(f"indexing the vectors of {rows:,} new chunks")
    await anyio.to_thread.run_sync(after_write, db)
    await anyio.to_thread.run_sync(drop_shown_pictures, db, ingestor.report)
    return ingestor.report.in_source_order()


async def _list_objects(
    ingestor: Ingestor,
    source: str,
    objects: ObjectStores | None,
    choice: FileChoice,
    positions: Iterator[int],
    engine: RayEngine | None = None,
) -> tuple[SourceKind, list[tuple[int, Item]], set[str]] | None:
    """The objects a source on object storage names, with their positions (left-out ones go to the
    report) and the uris of all it lists; None when it cannot be listed (reported as a failed source).
    With an `engine` whose cluster is running, a task on it lists them."""
    from haiku_cli.ingest.document import ConversionError
    from haiku_cli.ingest.reports import LeftOut

    if objects is None:
        ingestor.fail(source, f"{source}: object storage is not configured for this add")
        return None
    try:
        if engine is not None and engine.lists_on_cluster():
            listing = await engine.listing(objects, source, choice)
        else:
            listing = await anyio.to_thread.run_sync(lambda: objects.get(source).listing(source, choice))
    except ConversionError as exc:
        ingestor.fail(source, str(exc))
        return None
    found: list[tuple[int, Item]] = []
    for entry in listing.found:
        ingestor.position = next(positions)
        if isinstance(entry, LeftOut):
            ingestor.report.left_out.append(entry)
        else:
            found.append((ingestor.position, entry))
    listed = {e.source if isinstance(e, LeftOut) else e.uri for e in listing.found}
    return listing.kind, found, listed


@dataclass(frozen=True)
class _Remembered:
    """What remembered sources were added with, by key: --include/--exclude rules (where any) and
    --follow-symlinks."""

    rules: dict[str, FileChoice]
    follows: dict[str, bool]


def _remembered_options(db: Database) -> _Remembered:
    from haiku_cli.store.sources import has_sources, read_sources

    known = read_sources(db) if has_sources(db) else []
    return _Remembered(
        rules={s.source: FileChoice(s.include, s.exclude) for s in known if s.include or s.exclude},
        follows={s.source: s.follow_symlinks for s in known},
    )


def _gone_from(db: Database, folders: list[Path], object_folders: dict[str, set[str]]) -> list[str]:
    """The stored files, under the folders (or object-storage prefixes, with what each lists now) being
    added, that no longer exist (a sync or delete drops them)."""
    from urllib.parse import unquote, urlsplit

    from haiku_cli.ingest.sources import display_path

    prefixes = tuple(Path(os.path.abspath(f)).as_uri().rstrip("/") + "/" for f in folders)
    gone = []
    for uri in wait(stored_uris(db)):
        if any(
            uri.startswith(p.rstrip("/") + "/") and uri not in listed for p, listed in object_folders.items()
        ):
            gone.append(uri)
        elif prefixes and uri.startswith(prefixes):
            path = unquote(urlsplit(uri).path, errors="surrogateescape")
            if not os.path.lexists(path):
                gone.append(display_path(path))
    return sorted(gone)


def remember_outcomes(
    db: Database,
    sources: Sequence[RememberedSource],
    report: IngestReport,
    owners: dict[int, str],
    seen: dict[int, Seen],
) -> None:
    """Store the sources and the file states an add leaves (inside its write, so they agree with it)."""
    from haiku_cli.ingest.remembering import states_of
    from haiku_cli.store.sources import put_file_states, remember

    with storage_errors(db, "cannot be written"):
        remember(db, sources)
        put_file_states(db, states_of(report.outcomes, owners, seen))


async def ingest_items(
    ingestor: Ingestor,
    items: Sequence[tuple[int, Item]],
    *,
    title: str | None,
    metadata: dict[str, Any],
    limits: IngestSettings | None = None,
    fetched: dict[str, Fetched] | None = None,
    objects: ObjectStores | None = None,
) -> dict[int, Seen]:
    """Convert, embed and write the items (inside the caller's write); how each looked when read.

    `fetched`: URLs a sync has downloaded already (it asked whether they changed), not asked again.
    """
    seen: dict[int, Seen] = {}
    limits = limits or IngestSettings()
    ingestor.held.bound(limits.commit_chunks, limits.commit_seconds)
    ingestor.progress.add_files(len(items))  # all found before any is read: the total does not grow
    async with ingestor.pipelined():
        await _convert_all(
            ingestor,
            items,
            title=title,
            metadata=metadata,
            limits=limits,
            seen=seen,
            fetched=fetched or {},
            objects=objects,
        )
    return seen


async def _convert_all(
    ingestor: Ingestor,
    items: Sequence[tuple[int, Item]],
    *,
    title: str | None,
    metadata: dict[str, Any],
    limits: IngestSettings,
    seen: dict[int, Seen],
    fetched: dict[str, Fetched],
    objects: ObjectStores | None = None,
) -> None:
    """Convert and queue each source in order; unreadable ones are reported, other failures raised.

    A file's size and time are taken before it is read, so a change while it is read shows next time.
    """
    for position, item in items:
        ingestor.position = position
        label = item_label(item)
        ingestor.progress.reading(label)
        try:
            got = fetched.get(item) if isinstance(item, str) else None
            # A long step inside one file (OCR of a page) shows beside its name.
            step = partial(_show_step, ingestor.progress, label)
            looked, doc = await anyio.to_thread.run_sync(partial(read_item, item, limits, objects, got, step))
            seen[position] = looked
            await ingestor.add(doc, source=label, title=title, metadata=metadata)
        except HaikuError as exc:
            if exc.exit_code != InputError.exit_code:
                raise  # a model or database failure stops the add, and undoes it
            ingestor.fail(label, str(exc))
        finally:
            ingestor.progress.file_done()


async def add_on_cluster(
    ingestor: Ingestor,
    engine: RayEngine,
    items: Sequence[tuple[int, Item]],
    *,
    title: str | None,
    metadata: dict[str, Any],
    limits: IngestSettings | None,
    objects: ObjectStores | None,
    fetched: dict[str, Fetched] | None = None,
) -> dict[int, Seen]:
    """Have the cluster read, chunk and embed the items, and store them (inside the caller's write): the
    documents and updates written here, new documents' chunks committed as the workers' fragments.

    The cluster's work is entered inside the write, so that a failure ends every task (and what they
    wrote) before the write is undone. A sync's documents that may have moved (`moved_from`) come back
    with their chunks, for the writer to keep their ids; `fetched`: URLs a sync downloaded already (it
    asked whether they changed), which the workers are sent rather than download again.
    """
    from haiku_cli.store.fragments import commit_fragments, fragment_target

    db = ingestor.db
    seen: dict[int, Seen] = {}
    # A stored document's hash: a worker neither embeds one it finds unchanged nor writes its chunks.
    known = await stored_hashes(db)
    target = await anyio.to_thread.run_sync(fragment_target, db) if engine.settings.fragments else None
    ingestor.keep_points = target is None  # documents written are whole only once the fragments are in
    bounds = limits or IngestSettings()
    ingestor.held.bound(bounds.commit_chunks, bounds.commit_seconds)
    ingestor.progress.add_files(len(items))
    running = engine.running(
        items,
        title=title,
        limits=limits or IngestSettings(),
        objects=objects,
        known=known,
        metadata=metadata,
        target=target,
        moved=frozenset(ingestor.moved_from),
        fetched=fetched,
    )
    async with running as work:
        async with ingestor.pipelined():
            await _add_prepared(ingestor, work.prepared, title=title, metadata=metadata, seen=seen)
        if target is not None:
            # Chunks of documents not stored after all (a source given twice) are deleted in the same write.
            dropped = sorted(work.documents - ingestor.in_fragments)
            with storage_errors(db, "cannot be written"):
                await anyio.to_thread.run_sync(commit_fragments, db, work.fragments, dropped)
    return seen


async def _add_prepared(
    ingestor: Ingestor,
    prepared: AsyncIterator[Prepared],
    *,
    title: str | None,
    metadata: dict[str, Any],
    seen: dict[int, Seen],
) -> None:
    """Queue items a cluster read, chunked and embedded, in order, as `_convert_all` queues its own."""
    async for item in prepared:
        ingestor.position = item.position
        ingestor.progress.reading(item.label)
        try:
            if item.error is not None:
                raise item.error
            assert item.document is not None and item.seen is not None  # a worker sends either or an error
            seen[item.position] = item.seen
            await ingestor.add(
                item.document, source=item.label, title=title, metadata=metadata, prepared=item
            )
        except HaikuError as exc:
            if exc.exit_code != InputError.exit_code:
                raise
            ingestor.fail(item.label, str(exc))
        finally:
            ingestor.progress.file_done()


def item_label(item: Item) -> str:
    """How an item is named in the report and the progress line."""
    if isinstance(item, ObjectFile):
        return item.uri
    return str(item.path if isinstance(item, TextFile) else item)


def _show_step(progress: Progress, label: str, step: str) -> None:
    progress.reading(f"{label} ({step})")


def read_item(
    item: Item,
    limits: IngestSettings,
    objects: ObjectStores | None,
    fetched: Fetched | None = None,
    on_step: Callable[[str], None] | None = None,
) -> tuple[Seen, ConvertedDocument]:
    """Read and convert one item; how it looked when read (size and time, or validators) and its document.

    `fetched`: a URL a sync downloaded already; `on_step`: told of long steps within it (an OCR page).
    Unreadable items raise an input error.
    """
    if on_step is None:
        return _read_item(item, limits, objects, fetched)
    from haiku_cli.ingest.convert.ocr import progress_to

    with progress_to(on_step):
        return _read_item(item, limits, objects, fetched)


def _read_item(
    item: Item, limits: IngestSettings, objects: ObjectStores | None, fetched: Fetched | None
) -> tuple[Seen, ConvertedDocument]:
    from haiku_cli.ingest.convert import convert_file
    from haiku_cli.ingest.convert.url import Validators, fetch_if_changed
    from haiku_cli.ingest.remembering import Seen

    if isinstance(item, str):
        got = fetched or fetch_if_changed(item, limits=limits)
        # Asked without validators, or read by a sync that found it changed: never "not modified".
        return Seen(item, validators=got.validators), cast(ConvertedDocument, got.document)
    if isinstance(item, ObjectFile):
        assert objects is not None  # objects are found only with the clients that list them
        doc, etag = objects.get(item.uri).read(item, limits)
        return Seen(item.uri, item.size, item.mtime_ns, validators=Validators(etag=etag)), doc
    path, as_text = (item.path, True) if isinstance(item, TextFile) else (item, False)
    looked = _look_at(path)  # before it is read: a change while it is read shows next time
    return looked, convert_file(path, limits, as_text=as_text)


def _look_at(path: Path) -> Seen:
    from haiku_cli.ingest.document import ConversionError
    from haiku_cli.ingest.remembering import Seen

    try:
        return Seen.file(path, path.stat())
    except FileNotFoundError:  # gone since the walk found it: in the words convert_file uses
        raise ConversionError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConversionError(f"{path}: cannot read ({exc.strerror or exc})") from exc
