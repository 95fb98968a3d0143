"""Rebuilding a database's chunks: re-chunk and re-embed every stored document into a new chunks table."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import anyio.to_thread

from haiku_cli.ingest.chunking import Chunk, chunk_document
from haiku_cli.ingest.embedding import BATCH_CHUNKS, embed_chunks
from haiku_cli.ingest.reports import NoProgress, Progress
from haiku_cli.ingest.stored import from_stored, lines_before
from haiku_cli.store.database import Database
from haiku_cli.store.records import DocumentSummary
from haiku_cli.store.writer_lock import exclusive

if TYPE_CHECKING:
    from haiku_cli.embed import Embedder
    from haiku_cli.store.kept import Kept
    from haiku_cli.store.new_chunks_table import NewChunksTable


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
    With the same embedder, an identical chunk keeps its vector too: only what changed is embedded.
    """
    from haiku_cli.store.kept import KeptIds
    from haiku_cli.store.new_chunks_table import NewChunksTable
    from haiku_cli.store.reads import get_documents, list_documents

    progress = progress or NoProgress()
    dimension = await embedder.resolve_dimension()
    with exclusive(db):  # held by the command already; a library caller gets it here
        # The stored vectors stand in for identical chunks' only if this embedder made them. A batch's
        # vectors take about as much memory as its documents' text, which the rebuild holds anyway.
        reuse = db.embedder.name == embedder.name and db.embedder.dimension == dimension
        docs = await list_documents(db, limit=None)  # without content
        new = await anyio.to_thread.run_sync(NewChunksTable, db, dimension)
        try:
            written = Rebuilt(0, 0)
            pending: list[_Rebuilt] = []
            for start in range(0, len(docs), _REBUILD_DOCUMENTS):
                ids = [d.id for d in docs[start : start + _REBUILD_DOCUMENTS]]
                full = await get_documents(db, ids, content=True)
                read = partial(
                    KeptIds, db, ids, vectors_of=set(ids) if reuse else (), what="cannot be rebuilt"
                )
                kept = await anyio.to_thread.run_sync(read)
                placed = await _placed(db, ids)
                for doc in (full[i] for i in ids if i in full):
                    skipped = lines_before(doc.content, placed.get(doc.id, ()))
                    stored = from_stored(doc.uri, doc.title, doc.content, lines_skipped=skipped)
                    chunks = await anyio.to_thread.run_sync(
                        partial(chunk_document, stored, embedder.count_tokens, max_tokens=embedder.max_tokens)
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


async def _placed(db: Database, ids: list[str]) -> dict[str, list[tuple[int | None, int | None]]]:
    """Per document, (char_start, line_start) of a stored chunk that knows its source lines: what tells
    a re-cut chunk its lines (the stored text alone does not say what preceded it in the file)."""
    from haiku_cli.store.reads import chunk_rows_of
    from haiku_cli.store.transaction import storage_errors

    if not db.chunks_carry_spans:
        return {}
    with storage_errors(db, "cannot be rebuilt"):
        rows = (await chunk_rows_of(db, ids, ["document_id", "char_start", "line_start"])).to_pylist()
    placed: dict[str, list[tuple[int | None, int | None]]] = {}
    for r in rows:
        if r["line_start"] is not None and r["char_start"] is not None and r["document_id"] not in placed:
            placed[r["document_id"]] = [(r["char_start"], r["line_start"])]
    return placed


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
