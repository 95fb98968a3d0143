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
    if not writes and not more_chunks:
        return
    replaced = [w.replaces.id for w in writes if w.replaces is not None]
    doc_rows = []
    new_chunks: list[tuple[DocumentSummary, NewChunk]] = list(more_chunks)
    pictures = []
    for w in writes:
        doc = w.document
        if w.replaces is not None:
            doc = doc.model_copy(update={"id": w.replaces.id, "created_at": w.replaces.created_at})
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
        pictures.extend(picture_rows(doc.id, w.pictures))
    with storage_errors(db, "cannot be read"):  # the analyzer reads its index's settings from the store
        chunk_rows = make_chunk_rows(db.chunks, new_chunks)
    with exclusive(db):
        with atomic_write(db), storage_errors(db, "cannot be written"):
            ensure_held(db)
            if chunk_rows:
                # An older layout's table (as of now: the lock is held) takes the columns it has.
                chunk_rows = _as_stored(db, chunk_rows)
            if replaced:
                db.chunks.delete(in_list("document_id", replaced))
                db.documents.delete(in_list("id", replaced))
                if db.pictures is not None:
                    db.pictures.delete(in_list("document_id", replaced))
            if doc_rows:
                db.documents.add(doc_rows)
            if chunk_rows:
                db.chunks.add(chunk_rows)
            if pictures:
                db.create_pictures().add(pictures)
            checkpoint("data-written")
        after_write(db)


def _as_stored(db: Database, rows: list[dict]) -> list[dict]:
    missing = set()
    if not db.chunks_carry_documents:  # schema version 1
        missing |= set(schema.DOCUMENT_FIELDS.values())
    if not db.chunks_carry_spans:  # versions 1 and 2
        missing |= set(schema.SPAN_FIELDS)
    if not db.chunks_carry_terms:  # versions 1 to 3
        missing.add(schema.TERMS_FIELD)
    if not missing:
        return rows
    return [{k: v for k, v in row.items() if k not in missing} for row in rows]


def delete_document(db: Database, document_id: str) -> None:
    """Delete a document and its chunks together."""
    delete_documents(db, [document_id])


def delete_documents(db: Database, document_ids: Sequence[str]) -> None:
    """Delete documents with their chunks, and any source's claim on them, all together."""
    with exclusive(db):
        with atomic_write(db), storage_errors(db, "cannot be written"):
            ensure_held(db)
            for start in range(0, len(document_ids), DELETE_BATCH):
                ids = document_ids[start : start + DELETE_BATCH]
                db.chunks.delete(in_list("document_id", ids))
                db.documents.delete(in_list("id", ids))
                if db.pictures is not None:
                    db.pictures.delete(in_list("document_id", ids))
            drop_states_of_documents(db, document_ids)
        after_write(db)


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
