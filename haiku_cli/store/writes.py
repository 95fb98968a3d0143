"""Writing and deleting documents with their chunks, all-or-nothing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.handle import drop_tables
from haiku_cli.store.indexes import analyze
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.pictures import picture_rows
from haiku_cli.store.reads import count_documents, in_list
from haiku_cli.store.records import DocumentSummary, DocumentWrite, NewChunk
from haiku_cli.store.sources import DELETE_BATCH, drop_states_of_documents
from haiku_cli.store.transaction import atomic_write, storage_errors
from haiku_cli.store.writer import checkpoint, ensure_held, exclusive, remove_held_lock_file

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.table import Table


def new_id() -> str:
    """A fresh document or chunk id (UUID4: ids from different databases must not collide)."""
    return str(uuid.uuid4())


def make_chunk_rows(chunks: Table, new: Sequence[tuple[DocumentSummary, NewChunk]]) -> list[dict]:
    """Rows for new (document, chunk) pairs of table `chunks`: ids (fresh unless kept), search lengths.

    Each row carries its document's uri, title and metadata (schema version 2); `document.id` is the
    id the document is stored under.
    """
    copied: dict[str, dict[str, str | None]] = {}  # per document: its fields, encoded once
    rows = []
    for document, chunk in new:
        if document.id not in copied:
            fields = document_fields(document)
            copied[document.id] = {schema.DOCUMENT_FIELDS[k]: v for k, v in fields.items()}
        row = {
            "id": chunk.id or new_id(),
            "document_id": document.id,
            **copied[document.id],
            **chunk.model_dump(exclude={"id"}),
        }
        row["search_text"] = chunk.search_text or chunk.text
        rows.append(row)
    for row, terms in zip(rows, wait(analyze(chunks, [r["search_text"] for r in rows])), strict=True):
        row["search_tokens"] = len(terms)
        row[schema.TERMS_FIELD] = " ".join(terms)
    return rows


def document_fields(document: DocumentSummary) -> dict[str, str | None]:
    """A document's uri, title and metadata (JSON) as its stored row holds them (and its chunks' copy)."""
    return {
        "uri": document.uri,
        "title": document.title,
        "metadata": json.dumps(document.metadata, ensure_ascii=False),
    }


def write_documents(
    db: Database,
    writes: Sequence[DocumentWrite],
    more_chunks: Sequence[tuple[DocumentSummary, NewChunk]] = (),
) -> None:
    """Insert or replace documents and their chunks in one all-or-nothing write, then refresh indexes.

    `more_chunks` are (document, chunk) pairs of documents written earlier in the same enclosing
    `atomic_write` (under their stored ids): a long document is written in parts so its vectors are
    never all held at once.
    """
    with exclusive(db):  # the tables' columns are read as of now (an upgrade changes them)
        HeldWrites(db, commit_rows=0).write(writes, more_chunks)
    after_write(db)


# An add commits its batches in groups of about this many chunks (or bytes): each commit is a version of
# the table that LanceDB keeps state for until the add ends, which grew with a large add's ~600 commits of
# 512 chunks per table (bare LanceDB, 300k rows in 600 commits: 270 -> 332 MB; one commit: flat).
COMMIT_ROWS = 8_192
COMMIT_BYTES = 32 << 20


class HeldWrites:
    """Documents written inside one `atomic_write`, held as Arrow and committed together once they hold
    `commit_rows` chunks or `COMMIT_BYTES` (0: each write is committed at once).

    What is held is in no version yet: a failure or Ctrl-C drops it with the rest of the write, and a
    keep point (`transaction.keep_point`) is only meaningful right after a commit.
    """

    def __init__(self, db: Database, commit_rows: int | None = None) -> None:
        self.db = db
        self.commit_rows = COMMIT_ROWS if commit_rows is None else commit_rows
        self._replaced: list[str] = []
        self._documents: list[pa.Table] = []
        self._chunks: list[pa.Table] = []
        self._pictures: list[dict] = []
        self._rows = 0
        self._bytes = 0

    @property
    def held(self) -> bool:
        """Whether anything waits to be committed."""
        return bool(self._replaced or self._documents or self._chunks or self._pictures)

    def write(
        self, writes: Sequence[DocumentWrite], more_chunks: Sequence[tuple[DocumentSummary, NewChunk]] = ()
    ) -> None:
        """Hold documents (replacing `replaces`) and chunks, committing all held once enough is."""
        import pyarrow as pa

        if not writes and not more_chunks:
            return
        new_chunks: list[tuple[DocumentSummary, NewChunk]] = list(more_chunks)
        doc_rows = []
        for w in writes:
            doc = w.document
            if w.replaces is not None:
                doc = doc.model_copy(update={"id": w.replaces.id, "created_at": w.replaces.created_at})
                self._replaced.append(w.replaces.id)
            doc_rows.append(
                {
                    "id": doc.id,
                    **document_fields(doc),
                    "content": doc.content,
                    "content_hash": doc.content_hash,
                    "created_at": doc.created_at,
                    "updated_at": doc.updated_at,
                }
            )
            new_chunks.extend((doc, c) for c in w.chunks)
            pictures = picture_rows(doc.id, w.pictures)
            self._pictures.extend(pictures)
            self._bytes += sum(p["size"] for p in pictures)
        with storage_errors(self.db, "cannot be read"):  # the analyzer reads its index's settings
            chunk_rows = make_chunk_rows(self.db.chunks, new_chunks)
        # As Arrow in the tables' own columns (an older layout's chunks table takes those it has), far
        # smaller than the rows as Python objects (a vector: 1.5 KB, not 384 floats' ~12 KB). Rows the
        # table cannot hold fail here.
        held = ((doc_rows, self.db.documents, self._documents), (chunk_rows, self.db.chunks, self._chunks))
        with storage_errors(self.db, "cannot be written"):
            for rows, table, into in held:
                if rows:
                    arrow = pa.Table.from_pylist(rows, schema=table.schema)
                    into.append(arrow)
                    self._bytes += arrow.nbytes
        self._rows += len(chunk_rows)
        if self._rows >= self.commit_rows or self._bytes >= COMMIT_BYTES:
            self.commit()

    def commit(self) -> None:
        """Commit everything held in one all-or-nothing write: replaced documents go, new rows come."""
        if not self.held:
            return
        import pyarrow as pa

        db = self.db
        with exclusive(db), atomic_write(db), storage_errors(db, "cannot be written"):
            ensure_held(db)
            _delete_rows(db, self._replaced)
            if self._documents:
                db.documents.add(pa.concat_tables(self._documents))
            if self._chunks:
                db.chunks.add(pa.concat_tables(self._chunks))
            if self._pictures:
                db.create_pictures().add(self._pictures)
            checkpoint("data-written")
        self._replaced, self._documents, self._chunks, self._pictures = [], [], [], []
        self._rows = self._bytes = 0


def delete_document(db: Database, document_id: str) -> None:
    """Delete a document and its chunks together."""
    delete_documents(db, [document_id])


def delete_documents(db: Database, document_ids: Sequence[str]) -> None:
    """Delete documents with their chunks, and any source's claim on them, all together."""
    with exclusive(db):
        with atomic_write(db), storage_errors(db, "cannot be written"):
            ensure_held(db)
            _delete_rows(db, document_ids)
            drop_states_of_documents(db, document_ids)
        after_write(db)


def _delete_rows(db: Database, document_ids: Sequence[str]) -> None:
    """Delete the rows of these documents from every table holding them, `DELETE_BATCH` ids a filter."""
    for start in range(0, len(document_ids), DELETE_BATCH):
        ids = document_ids[start : start + DELETE_BATCH]
        db.chunks.delete(in_list("document_id", ids))
        db.documents.delete(in_list("id", ids))
        if db.pictures is not None:
            db.pictures.delete(in_list("document_id", ids))


def remove_unwritten(db: Database, *, folder: bool) -> None:
    """Remove a database that holds no document, so that a failed first add leaves none behind.

    Called with the writer lock held; `folder`: the local folder was made for it too (else it stays).
    """
    if db.writer_lock is None:
        raise RuntimeError("remove_unwritten needs the writer lock")
    with storage_errors(db, "cannot be removed"):
        if wait(count_documents(db)) > 0:
            return  # another writer filled it meanwhile: it is theirs now
        db.writer_lock.abandon()
        # The meta table goes last: while it exists the database does, and an object store's lease
        # (the lock of other writers) lives in it.
        drop_tables(db.conn, (db.chunks_table_name, schema.DOCUMENTS, *schema.SIDE_TABLES, schema.META))
    path = db.location.local_path
    if path is None:
        return
    remove_held_lock_file(path, folder=folder)
