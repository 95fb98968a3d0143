"""The writer side of an add: queue converted documents (skipping the unchanged), chunk, embed, write in
batches. Either engine (ingest/engine.py) hands it what it read, in order."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from haiku_cli.errors import DatabaseError
from haiku_cli.ingest.chunking import Chunk, chunk_document
from haiku_cli.ingest.document import ConvertedDocument
from haiku_cli.ingest.embedding import BATCH_CHUNKS, embed_chunks
from haiku_cli.ingest.items import Prepared
from haiku_cli.ingest.part_documents import gone_parts, part_label
from haiku_cli.ingest.reports import IngestReport, NoProgress, Progress, SourceOutcome, Status
from haiku_cli.ingest.stages import hand_on, two_stages
from haiku_cli.ingest.stored import content_hash, picture_records, stored_content, stored_metadata
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.document_writes import HeldWrites, delete_documents, new_id
from haiku_cli.store.heap import return_large_buffers
from haiku_cli.store.reads import count_documents, find_by_hash, find_by_uri
from haiku_cli.store.records import DocumentRecord, DocumentWrite, NewChunk, PictureRecord

if TYPE_CHECKING:
    import numpy as np
    from anyio.streams.memory import MemoryObjectSendStream

    from haiku_cli.embed import Embedder
    from haiku_cli.store.kept import Kept, KeptIds


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
        # Documents read out of another (a mail's attachments) are being queued: their outcomes say so.
        self._adding_part = False
        # uri of each document queued with its parts -> the uris of those parts, and its source's name
        self._families: dict[str, tuple[set[str], str]] = {}

    async def add(
        self,
        doc: ConvertedDocument,
        *,
        source: str,
        title: str | None = None,
        metadata: dict[str, Any],
        prepared: Prepared | None = None,
    ) -> None:
        """Queue one converted document (a no-op when its content is unchanged), then the documents read
        out of it (a mail's attachments), each as a document of its own with the metadata given.

        `prepared`: its chunks and their vectors, made elsewhere from this document (used when they
        were made under the title it is stored with; else it is chunked and embedded here). Stored
        parts of it that it no longer holds are deleted once everything is written.
        """
        again = bool(doc.uri) and doc.uri in self._queued
        await self._add_one(doc, source=source, title=title, metadata=metadata, prepared=prepared)
        if not doc.owns_children or not doc.uri or again:
            return
        self._adding_part = True
        # Prepared by a cluster's worker with the document they were read out of, one each, in order.
        parts = prepared.parts if prepared is not None else ()
        try:
            for i, child in enumerate(doc.children):
                label = part_label(source, doc.uri, child.uri)
                part = parts[i] if i < len(parts) else None
                await self._add_one(child, source=label, metadata=metadata, prepared=part)
        finally:
            self._adding_part = False
        self._families[doc.uri] = ({c.uri for c in doc.children}, source)

    async def _add_one(
        self,
        doc: ConvertedDocument,
        *,
        source: str,
        title: str | None = None,
        metadata: dict[str, Any],
        prepared: Prepared | None = None,
    ) -> None:
        content = stored_content(doc)
        note = "; ".join(doc.notes) or None
        digest = content_hash(content, [p.data for p in doc.pictures])
        uri = doc.uri or None
        if self._queued_before(uri, digest, source, note):
            return
        existing = await self._replaced(uri, digest)
        if _unchanged(existing, uri, digest, title, metadata and stored_metadata(doc, metadata)):
            assert existing is not None
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
        chunks, vectors = await self._chunks_of(doc, title, prepared)
        if not chunks:
            self.report.outcomes.append(
                self._outcome(source=source, status="failed", error=f"{source}: no text to index")
            )
            return
        kept = existing.metadata if existing is not None else None
        record = _record(uri, title or doc.title, stored_metadata(doc, metadata, kept), content, digest)
        await self._queue(doc, record, existing, chunks, vectors, source=source, note=note)

    def _queued_before(self, uri: str | None, digest: str, source: str, note: str | None) -> bool:
        """Whether this add queued the same source already (e.g. a folder and a file in it); reported."""
        queued = self._queued.get(uri or digest)
        if queued is None:
            return False
        if queued[1] == digest:
            self.report.outcomes.append(
                self._outcome(source=source, status="unchanged", document_id=queued[0], note=note)
            )
        else:
            self.fail(source, f"{source}: changed while it was being added; add it again")
        return True

    async def _replaced(self, uri: str | None, digest: str) -> DocumentRecord | None:
        """The stored document this one would replace (a sync's moved file keeps the id it had)."""
        existing = await anyio.to_thread.run_sync(self._stored, uri, digest)
        if existing is None and uri is not None and digest in self.moved_from:
            # The file of a document that left its source, found under a new name: a rename keeps the id.
            existing = self.moved_from.pop(digest)
            self.moved[existing.id] = existing.uri or ""
        return existing

    async def _chunks_of(
        self, doc: ConvertedDocument, title: str | None, prepared: Prepared | None
    ) -> tuple[list[Chunk], np.ndarray | None]:
        """The document's chunks, with their vectors when a worker made them under the title it gets."""
        if prepared is not None and prepared.chunks is not None and prepared.title == (title or doc.title):
            return prepared.chunks, prepared.vectors
        chunks = await anyio.to_thread.run_sync(
            lambda: chunk_document(doc, self.embedder.count_tokens, max_tokens=self.embedder.max_tokens)
        )
        return chunks, None

    async def _queue(
        self,
        doc: ConvertedDocument,
        record: DocumentRecord,
        existing: DocumentRecord | None,
        chunks: list[Chunk],
        vectors: np.ndarray | None,
        *,
        source: str,
        note: str | None,
    ) -> None:
        """Queue a document's chunks in parts that fill the batches; a full batch goes on to be embedded."""
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
        self._queued[record.uri or record.content_hash] = (document_id, record.content_hash)
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
            metadata=stored_metadata(doc, metadata),
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
        return SourceOutcome.at(self.position, part=self._adding_part, **fields)

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
        await anyio.to_thread.run_sync(self._drop_gone_parts)

    def _drop_gone_parts(self) -> None:
        """Delete the stored parts of the documents queued with theirs that they no longer hold (an
        attachment taken out of a mail), and those left under the uri a moved document had."""
        if not self._families or self._empty_before:
            return
        gone = gone_parts(self.db, self._families, self.moved.values())
        if not gone:
            return
        delete_documents(self.db, list(gone))  # joins this add's write
        for document_id, named in gone.items():
            self.report.outcomes.append(
                SourceOutcome.at(
                    self.position, part=True, source=named, status="deleted", document_id=document_id
                )
            )

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
# A batch ready to write: whole or first parts of documents, further chunks of documents written before,
# and whether every document in it is whole once it is written.
_Embedded = tuple[list[DocumentWrite], list[tuple[DocumentRecord, NewChunk]], bool]


def _unchanged(
    existing: DocumentRecord | None, uri: str | None, digest: str, title: str | None, metadata: dict[str, Any]
) -> bool:
    """Whether the stored document is this one as it would be stored (given title and metadata too)."""
    return (
        existing is not None
        and existing.uri == uri
        and existing.content_hash == digest
        and (title is None or title == existing.title)
        and (not metadata or metadata == existing.metadata)
    )


def _record(
    uri: str | None,
    title: str | None,
    metadata: dict[str, Any],
    content: str,
    digest: str,
) -> DocumentRecord:
    now = datetime.now(UTC)
    return DocumentRecord(
        id=new_id(),
        uri=uri,
        title=title,
        metadata=metadata,
        content=content,
        content_hash=digest,
        created_at=now,
        updated_at=now,
    )
