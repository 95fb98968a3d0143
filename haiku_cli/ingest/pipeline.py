"""Adding sources to one database: convert, skip the unchanged, chunk, embed, write in batches."""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

import anyio.to_thread
from pydantic import BaseModel, Field, PrivateAttr

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import HaikuError, InputError
from haiku_cli.ingest.chunking import Chunk, chunk_document
from haiku_cli.ingest.document import ConvertedDocument, Segment
from haiku_cli.store.database import Database
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.reads import count_documents, find_by_hash, find_by_uri
from haiku_cli.store.records import DocumentRecord, DocumentSummary, DocumentWrite, NewChunk
from haiku_cli.store.transaction import atomic_write
from haiku_cli.store.writer import exclusive
from haiku_cli.store.writes import new_id, write_documents

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from haiku_cli.embed import Embedder
    from haiku_cli.store.kept import Kept, KeptIds
    from haiku_cli.store.rebuild import NewChunksTable

# "skipped": left out on purpose (a symlink out of the folder); "failed": could not be read or converted.
Status = Literal["added", "updated", "unchanged", "skipped", "failed"]
# Chunks are embedded and written in batches of this many (a long document spans several), so memory
# holds the vectors of a few batches, never of a whole folder or a whole big file. The add as a whole
# stays one all-or-nothing write.
BATCH_CHUNKS = 512
PAGE_BREAK = "\f"


class Progress(Protocol):
    """Where long work reports how far it got (a rich bar on a terminal, nothing when piped)."""

    def add_total(self, chunks: int) -> None: ...
    def advance(self, chunks: int) -> None: ...


class _NoProgress:
    def add_total(self, chunks: int) -> None:
        pass

    def advance(self, chunks: int) -> None:
        pass


class SourceOutcome(BaseModel):
    """What happened to one source."""

    source: str
    status: Status
    document_id: str | None = None
    chunks: int = 0
    error: str | None = None
    note: str | None = None  # read, but with something worth knowing (e.g. not UTF-8)
    # "updated": how many of its chunks came out identical and kept their ids (None for the other statuses)
    kept_chunk_ids: int | None = None
    # Where the source was given or found: batches report out of that order, the report is put back in it.
    _position: int = PrivateAttr(default=0)


class IngestReport(BaseModel):
    """The outcome of every source of one add, in the database it went to."""

    database: str = ""
    outcomes: list[SourceOutcome] = Field(default_factory=list)

    @property
    def failed(self) -> list[SourceOutcome]:
        """The sources that could not be added."""
        return [o for o in self.outcomes if o.status == "failed"]


def content_hash(text: str) -> str:
    """The hash that decides whether a re-added source changed."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stored_content(doc: ConvertedDocument) -> str:
    """The text stored for a document; each page ends with a form feed so rebuild can recover pages."""
    if any(s.page is not None for s in doc.segments):
        return "".join(s.text + PAGE_BREAK for s in doc.segments)
    return doc.text


def from_stored(uri: str | None, title: str | None, content: str) -> ConvertedDocument:
    """Rebuild a converted document from stored content (the inverse of `stored_content`)."""
    if content.endswith(PAGE_BREAK):
        pages = content[: -len(PAGE_BREAK)].split(PAGE_BREAK)
        segments = [Segment(text, page=i) for i, text in enumerate(pages, start=1)]
    else:
        segments = [Segment(content)]
    return ConvertedDocument(uri=uri or "", title=title, segments=segments)


def embedding_text(title: str | None, chunk: Chunk) -> str:
    """What is embedded for a chunk: its title and heading path give short chunks their context."""
    context = [p for p in [title, *chunk.heading_path] if p]
    return (" > ".join(context) + "\n\n" + chunk.text) if context else chunk.text


async def embed_chunks(
    embedder: Embedder,
    titled: Sequence[tuple[str | None, Chunk]],
    on_progress: Callable[[int], None],
    kept: Sequence[Kept | None] | None = None,
) -> list[NewChunk]:
    """Embed chunks (each with its document title) into rows to store, in order.

    `kept`, one per chunk: the stored chunk it keeps the id of, whose vector (when read) is reused
    instead of embedding the same text again.
    """
    kept = kept or [None] * len(titled)
    texts = [embedding_text(title, c) for title, c in titled]
    missing = [i for i, k in enumerate(kept) if k is None or k.vector is None]
    embedded = iter(
        await embedder.embed_documents([texts[i] for i in missing], on_progress=on_progress)
        if missing
        else []
    )
    if len(missing) < len(texts):
        on_progress(len(texts) - len(missing))
    vectors = [next(embedded) if k is None or k.vector is None else k.vector for k in kept]
    return [
        NewChunk(
            id=k.id if k else None,
            order=c.order,
            text=c.text,
            heading_path=list(c.heading_path),
            pages=list(c.pages),
            search_text=text,
            vector=vector.tolist(),
        )
        for (_, c), text, vector, k in zip(titled, texts, vectors, kept, strict=True)
    ]


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

    @property
    def stored(self) -> DocumentRecord:
        """The document under the id it is stored with (a replaced document keeps its id)."""
        if self.replaces is None:
            return self.document
        return self.document.model_copy(update={"id": self.replaces.id})


class Ingestor:
    """Adds converted documents to one database, batching the embedding and the writes.

    Inside `pipelined()`, batches flow through two stages that run while the caller converts and chunks
    the next sources: the embedder, and the writer, which stores batch N while batch N+1 embeds.
    """

    def __init__(self, db: Database, embedder: Embedder, progress: Progress | None = None) -> None:
        self.db = db
        self.embedder = embedder
        self.progress = progress or _NoProgress()
        self.report = IngestReport(database=db.name)
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
        self._to_embed: MemoryObjectSendStream[list[_Part]] | None = None
        self.position = 0  # of the source being handled, among those given and found (see SourceOutcome)

    async def add(
        self, doc: ConvertedDocument, *, source: str, title: str | None = None, metadata: dict[str, Any]
    ) -> None:
        """Queue one converted document (a no-op when its content is unchanged)."""
        content = stored_content(doc)
        note = "; ".join(doc.notes) or None
        digest = content_hash(content)
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
        if (
            existing is not None
            and existing.content_hash == digest
            and (title is None or title == existing.title)
            and (not metadata or metadata == existing.metadata)
        ):
            self.report.outcomes.append(
                self._outcome(source=source, status="unchanged", document_id=existing.id, note=note)
            )
            return
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
            self._batch.append(_Part(record, part, existing, start == 0, outcome, reuse_vectors))
            self._batch_chunks += len(part)
            start += len(part)
            if self._batch_chunks >= BATCH_CHUNKS:
                await self._send_batch()
        if self._unreported_chunks >= BATCH_CHUNKS:
            self._report_queued()

    def _stored(self, uri: str | None, digest: str) -> DocumentRecord | None:
        """The stored document this one would replace; a database empty when the add began has none to
        look up (it is locked for this add), which saves a query per source on a first add."""
        if self._empty_before is None:
            self._empty_before = count_documents(self.db) == 0
        if self._empty_before:
            return None
        return find_by_uri(self.db, uri) if uri else find_by_hash(self.db, digest)

    def _outcome(self, **fields: Any) -> SourceOutcome:
        outcome = SourceOutcome(**fields)
        outcome._position = self.position
        return outcome

    def in_source_order(self) -> IngestReport:
        """The report with its outcomes in the order the sources were given and found."""
        self.report.outcomes.sort(key=lambda o: o._position)  # stable: a source's own outcomes keep theirs
        return self.report

    def fail(self, source: str, error: str) -> None:
        """Record a source that could not be converted."""
        self.report.outcomes.append(self._outcome(source=source, status="failed", error=error))

    def skip(self, source: str, reason: str) -> None:
        """Record a source left out on purpose, with the reason as its note."""
        self.report.outcomes.append(self._outcome(source=source, status="skipped", note=reason))

    async def flush(self) -> None:
        """Embed and write everything queued (inside `pipelined()`: hand it to the stages)."""
        self._report_queued()
        await self._send_batch()

    def _report_queued(self) -> None:
        # Each outcome is final once its document is queued: a later failure undoes the whole add.
        self.report.outcomes.extend(self._unreported)
        self._unreported, self._unreported_chunks = [], 0

    async def _send_batch(self) -> None:
        batch, self._batch, self._batch_chunks = self._batch, [], 0
        if not batch:
            return
        if self._to_embed is not None:
            await self._to_embed.send(batch)
        else:
            await self._write(await self._embed(batch))

    @asynccontextmanager
    async def pipelined(self) -> AsyncIterator[None]:
        """Run the embedder and the writer as stages beside the caller; on exit, flush and wait for both.

        Batches are handed from stage to stage, never queued: at most three are held (being built, being
        embedded, being written), so memory stays bounded however many sources there are.
        A failure in any stage cancels the others (after the batch in hand) and is raised as itself.
        """
        to_embed, embed_queue = anyio.create_memory_object_stream[list[_Part]](0)
        to_write, write_queue = anyio.create_memory_object_stream[_Embedded](0)
        try:
            async with anyio.create_task_group() as stages:
                stages.start_soon(self._embed_stage, embed_queue, to_write)
                stages.start_soon(self._write_stage, write_queue)
                self._to_embed = to_embed
                try:
                    yield
                    await self.flush()
                finally:
                    self._to_embed = None
                    to_embed.close()  # the embed stage ends once it has taken the last batch
        except BaseExceptionGroup as group:
            error = _first_error(group)
            raise error from error.__cause__  # the error itself, with its own cause

    async def _embed_stage(
        self,
        batches: MemoryObjectReceiveStream[list[_Part]],
        out: MemoryObjectSendStream[_Embedded],
    ) -> None:
        async with batches, out:
            async for batch in batches:
                await out.send(await self._embed(batch))

    async def _write_stage(self, batches: MemoryObjectReceiveStream[_Embedded]) -> None:
        async with batches:
            async for embedded in batches:
                await self._write(embedded)

    async def _embed(self, batch: list[_Part]) -> _Embedded:
        titled = [(p.document.title, c) for p in batch for c in p.chunks]
        kept = await self._kept_chunks(batch)
        embedded = iter(await embed_chunks(self.embedder, titled, self.progress.advance, kept))
        writes, more = [], []
        for p in batch:
            chunks = [next(embedded) for _ in p.chunks]
            if p.first:
                writes.append(DocumentWrite(document=p.document, chunks=chunks, replaces=p.replaces))
            else:
                more.extend((p.stored, c) for c in chunks)
        return writes, more

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
        writes, more = embedded
        await anyio.to_thread.run_sync(lambda: write_documents(self.db, writes, more_chunks=more))


# Updated documents of up to this many chunks reuse the stored vectors of their identical chunks.
_REUSE_VECTORS_UP_TO = 4 * BATCH_CHUNKS
# A batch ready to write: whole or first parts of documents, and further chunks of documents written before.
_Embedded = tuple[list[DocumentWrite], list[tuple[DocumentRecord, NewChunk]]]


def _first_error(group: BaseExceptionGroup) -> BaseException:
    """The error that stopped a task group (the others were cancelled because of it)."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_error(exc)
        if not isinstance(exc, anyio.get_cancelled_exc_class()):
            return exc
    return group


def parse_metadata(pairs: Sequence[str]) -> dict[str, Any]:
    """`k=v` pairs from the command line into a metadata dict."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--meta takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


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


def is_url(source: str) -> bool:
    """Whether a source argument is an http(s) URL rather than a path."""
    return source.startswith(("http://", "https://"))


async def add_sources(
    db: Database,
    embedder: Embedder,
    sources: Sequence[str],
    *,
    title: str | None,
    metadata: dict[str, Any],
    progress: Progress | None = None,
    follow_symlinks: bool = False,
    limits: IngestSettings | None = None,
) -> IngestReport:
    """Add files, directories (recursively) and URLs; unreadable sources are reported, the rest added.

    Symlinks leading out of a directory are skipped unless `follow_symlinks`; files over `limits` are
    reported as failed. The whole add is one all-or-nothing write: a model or database failure, Ctrl-C
    or a kill leaves the database as it was before the command.
    """
    from haiku_cli.ingest.sources import SkippedSource, display_path, iter_source_files

    limits = limits or IngestSettings()
    items: list[tuple[int, str | Path]] = []  # with their positions among the sources given and found
    ingestor = Ingestor(db, embedder, progress)
    positions = itertools.count()
    for source in sources:
        ingestor.position = next(positions)
        if is_url(source):
            items.append((ingestor.position, source))
            continue
        path = Path(source).expanduser()
        if not os.path.lexists(path):
            ingestor.fail(display_path(source), f"{display_path(source)}: no such file or directory")
            continue
        for entry in iter_source_files(path, follow_symlinks=follow_symlinks):
            ingestor.position = next(positions)
            if not isinstance(entry, SkippedSource):
                items.append((ingestor.position, entry))
            elif entry.failed:
                ingestor.fail(entry.source, f"{entry.source}: {entry.reason}")
            else:
                ingestor.skip(entry.source, entry.reason)
    if title is not None and len(items) > 1:
        raise InputError("--title names one document, but the sources hold several; drop --title")
    with atomic_write(db):
        async with ingestor.pipelined():
            await _convert_all(ingestor, items, title=title, metadata=metadata, limits=limits)
    await anyio.to_thread.run_sync(after_write, db)
    return ingestor.in_source_order()


async def _convert_all(
    ingestor: Ingestor,
    items: Sequence[tuple[int, str | Path]],
    *,
    title: str | None,
    metadata: dict[str, Any],
    limits: IngestSettings,
) -> None:
    """Convert and queue each source in order; unreadable ones are reported, other failures raised."""
    from haiku_cli.ingest.convert import convert_file, fetch_url

    for position, item in items:
        ingestor.position = position
        label = str(item)
        try:
            if isinstance(item, str):
                doc = await anyio.to_thread.run_sync(lambda url=item: fetch_url(url, limits=limits))
            else:
                doc = await anyio.to_thread.run_sync(convert_file, item, limits)
            await ingestor.add(doc, source=label, title=title, metadata=metadata)
        except HaikuError as exc:
            if exc.exit_code != InputError.exit_code:
                raise  # a model or database failure stops the add, and undoes it
            ingestor.fail(label, str(exc))


class Rebuilt(NamedTuple):
    """What a rebuild wrote: its chunks, and how many of them kept the id of an identical stored chunk."""

    chunks: int
    kept_chunk_ids: int


async def rebuild(db: Database, embedder: Embedder, progress: Progress | None = None) -> Rebuilt:
    """Re-chunk and re-embed every document into a new chunks table, switched in by one commit.

    Documents are read, embedded and written in batches, so memory holds a few batches whatever the
    size of the database; a failure or Ctrl-C drops the new table and leaves the database as it was.
    Documents keep their ids, and so does each chunk that comes out identical (`KeptIds`), so saved
    citations of it still resolve; only chunks that changed (e.g. with the chunk size) get new ids.
    """
    from haiku_cli.store.kept import KeptIds
    from haiku_cli.store.reads import get_documents, list_documents
    from haiku_cli.store.rebuild import NewChunksTable

    progress = progress or _NoProgress()
    dimension = await embedder.resolve_dimension()
    with exclusive(db):  # held by the command already; a library caller gets it here
        docs = await anyio.to_thread.run_sync(lambda: list_documents(db, limit=None))  # without content
        new = await anyio.to_thread.run_sync(NewChunksTable, db, dimension)
        try:
            written = Rebuilt(0, 0)
            pending: list[_Rebuilt] = []
            for start in range(0, len(docs), _REBUILD_DOCUMENTS):
                ids = [d.id for d in docs[start : start + _REBUILD_DOCUMENTS]]
                full = await anyio.to_thread.run_sync(lambda ids=ids: get_documents(db, ids, content=True))
                kept = await anyio.to_thread.run_sync(
                    lambda ids=ids: KeptIds(db, ids, what="cannot be rebuilt")
                )
                for doc in (full[i] for i in ids if i in full):
                    stored = from_stored(doc.uri, doc.title, doc.content)
                    chunks = await anyio.to_thread.run_sync(
                        lambda stored=stored: chunk_document(
                            stored, embedder.count_tokens, max_tokens=embedder.max_tokens
                        )
                    )
                    progress.add_total(len(chunks))
                    summary = doc.summary()  # its chunks carry its fields, not its content
                    pending.extend(
                        (summary, c, kept.take(doc.id, c.text, c.heading_path, c.pages)) for c in chunks
                    )
                    while len(pending) >= BATCH_CHUNKS:
                        batch, pending = pending[:BATCH_CHUNKS], pending[BATCH_CHUNKS:]
                        written = _plus(written, await _rebuild_batch(new, embedder, batch, progress))
            if pending:
                written = _plus(written, await _rebuild_batch(new, embedder, pending, progress))
            await anyio.to_thread.run_sync(new.switch, embedder.name)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(new.discard)
            raise
    return written


# Documents whose content (and stored chunk keys) a rebuild reads at once; their chunks go on in
# batches of BATCH_CHUNKS.
_REBUILD_DOCUMENTS = 64
# A rebuilt chunk with its document, and the stored chunk whose id it keeps (None: a new one).
_Rebuilt = tuple[DocumentSummary, Chunk, "Kept | None"]


def _plus(a: Rebuilt, b: Rebuilt) -> Rebuilt:
    return Rebuilt(a.chunks + b.chunks, a.kept_chunk_ids + b.kept_chunk_ids)


async def _rebuild_batch(
    new: NewChunksTable, embedder: Embedder, batch: list[_Rebuilt], progress: Progress
) -> Rebuilt:
    titled = [(doc.title, c) for doc, c, _ in batch]
    rows = await embed_chunks(embedder, titled, progress.advance, [k for _, _, k in batch])
    await anyio.to_thread.run_sync(
        new.add, [(doc, row) for (doc, _, _), row in zip(batch, rows, strict=True)]
    )
    return Rebuilt(len(rows), sum(k is not None for _, _, k in batch))
