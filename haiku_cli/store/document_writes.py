"""Writing and deleting documents with their chunks, all-or-nothing."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.handle import drop_tables
from haiku_cli.store.indexes import analyze
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.picture_table import picture_rows
from haiku_cli.store.reads import count_documents, in_list
from haiku_cli.store.records import DocumentSummary, DocumentWrite, NewChunk
from haiku_cli.store.source_tables import DELETE_BATCH, drop_states_of_documents
from haiku_cli.store.transaction import atomic_write, keep_point, storage_errors
from haiku_cli.store.writer_lock import checkpoint, ensure_held, exclusive, remove_held_lock_file

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
# ... or once its first batch was held this long, so that a slow add interrupted keeps what it finished.
COMMIT_SECONDS = 30.0


@dataclass
class _Group:
    """Rows held for one commit, as Arrow in the tables' own columns."""

    replaced: list[str] = field(default_factory=list)
    documents: list[pa.Table] = field(default_factory=list)
    chunks: list[pa.Table] = field(default_factory=list)
    pictures: list[dict] = field(default_factory=list)
    document_count: int = 0
    rows: int = 0
    bytes: int = 0

    def __bool__(self) -> bool:
        return bool(self.replaced or self.documents or self.chunks or self.pictures)

    def take(self, other: _Group) -> None:
        """Hold `other`'s rows after these."""
        self.replaced += other.replaced
        self.documents += other.documents
        self.chunks += other.chunks
        self.pictures += other.pictures
        self.document_count += other.document_count
        self.rows += other.rows
        self.bytes += other.bytes


class HeldWrites:
    """Documents written inside one `atomic_write`, held as Arrow and committed together once they hold
    `commit_rows` chunks or `COMMIT_BYTES`, or were first held `commit_seconds` ago (0 rows: each write
    is committed at once).

    What is held is in no version yet: a failure or Ctrl-C drops it with the rest of the write. A write
    that ends at a document boundary (`boundary`) closes what is held: a group is committed up to its
    last boundary first, and that commit is a keep point (`transaction.keep_point`), which an interrupted
    write keeps; a document cut by a commit is kept only once a later commit holds the rest of it.
    """

    def __init__(
        self, db: Database, commit_rows: int | None = None, commit_seconds: float | None = None
    ) -> None:
        self.db = db
        self.commit_rows = COMMIT_ROWS if commit_rows is None else commit_rows
        self.commit_seconds = COMMIT_SECONDS if commit_seconds is None else commit_seconds
        self._closed = _Group()  # held documents, each whole
        self._open = _Group()  # held since the last boundary: the last document may go on
        self._since: float | None = None  # when the first held write came
        self._written = (0, 0)  # documents and chunks this write committed
        self.keeps = True  # False: documents committed are not whole yet (a cluster's uncommitted chunks)

    def bound(self, rows: int, seconds: float) -> None:
        """Commit every `rows` chunks, or `seconds` after a group's first write."""
        self.commit_rows, self.commit_seconds = rows, seconds

    @property
    def held(self) -> bool:
        """Whether anything waits to be committed."""
        return bool(self._closed or self._open)

    def write(
        self,
        writes: Sequence[DocumentWrite],
        more_chunks: Sequence[tuple[DocumentSummary, NewChunk]] = (),
        *,
        boundary: bool = True,
    ) -> None:
        """Hold documents (replacing `replaces`) and chunks, committing once enough is held.

        `boundary`: every document held is whole after these rows, and may be kept by a Ctrl-C.
        """
        if not writes and not more_chunks:
            return
        if self._since is None:
            self._since = time.monotonic()
        if not boundary and writes:
            # Rows come in document order: only the last document may go on in the next write.
            self._hold(writes[:-1], more_chunks)
            self._close()
            self._hold(writes[-1:], ())
        else:
            self._hold(writes, more_chunks)
            if boundary:
                self._close()
        held_rows = self._closed.rows + self._open.rows
        held_bytes = self._closed.bytes + self._open.bytes
        timed_out = time.monotonic() - self._since >= self.commit_seconds
        if held_rows >= self.commit_rows or held_bytes >= COMMIT_BYTES or (timed_out and self._closed):
            self._commit_closed()
            if self._open.rows >= self.commit_rows or self._open.bytes >= COMMIT_BYTES:
                self._commit(self._open)  # one long document: memory stays bounded, nothing is kept
                self._open = _Group()

    def _close(self) -> None:
        """Every document held is whole: what is held may be committed as a keep point."""
        self._closed.take(self._open)
        self._open = _Group()

    def _hold(
        self, writes: Sequence[DocumentWrite], more_chunks: Sequence[tuple[DocumentSummary, NewChunk]]
    ) -> None:
        import pyarrow as pa

        if not writes and not more_chunks:
            return
        held = self._open
        new_chunks: list[tuple[DocumentSummary, NewChunk]] = list(more_chunks)
        doc_rows = []
        for w in writes:
            doc = w.document
            if w.replaces is not None:
                doc = doc.model_copy(update={"id": w.replaces.id, "created_at": w.replaces.created_at})
                held.replaced.append(w.replaces.id)
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
            held.pictures.extend(pictures)
            held.bytes += sum(p["size"] for p in pictures)
        with storage_errors(self.db, "cannot be read"):  # the analyzer reads its index's settings
            chunk_rows = make_chunk_rows(self.db.chunks, new_chunks)
        # As Arrow in the tables' own columns (an older layout's chunks table takes those it has), far
        # smaller than the rows as Python objects (a vector: 1.5 KB, not 384 floats' ~12 KB). Rows the
        # table cannot hold fail here.
        into = ((doc_rows, self.db.documents, held.documents), (chunk_rows, self.db.chunks, held.chunks))
        with storage_errors(self.db, "cannot be written"):
            for rows, table, tables in into:
                if rows:
                    arrow = pa.Table.from_pylist(rows, schema=table.schema)
                    tables.append(arrow)
                    held.bytes += arrow.nbytes
        held.document_count += len(doc_rows)
        held.rows += len(chunk_rows)

    def commit(self) -> None:
        """Commit everything held (each document whole by now), as a keep point."""
        self._close()
        self._commit_closed()

    def _commit_closed(self) -> None:
        if self._closed:
            self._commit(self._closed)
            self._closed = _Group()
            if self.keeps:
                keep_point(self.db)  # Ctrl-C from here on keeps every document committed so far
        self._since = time.monotonic() if self._open else None

    def _commit(self, group: _Group) -> None:
        """Commit a group in one all-or-nothing write: replaced documents go, new rows come."""
        import pyarrow as pa

        db = self.db
        with exclusive(db), atomic_write(db), storage_errors(db, "cannot be written"):
            ensure_held(db)
            _delete_rows(db, group.replaced)
            if group.documents:
                db.documents.add(pa.concat_tables(group.documents))
            if group.chunks:
                db.chunks.add(pa.concat_tables(group.chunks))
            if group.pictures:
                db.create_pictures().add(group.pictures)
            checkpoint("data-written")
            documents, chunks = self._written
            self._written = (documents + group.document_count, chunks + group.rows)
            db.written = self._written


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
