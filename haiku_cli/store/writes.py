"""Writing and deleting documents with their chunks, all-or-nothing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from haiku_cli.store.database import Database
from haiku_cli.store.indexes import analyze, refresh_indexes
from haiku_cli.store.reads import in_list, sql_string
from haiku_cli.store.records import DocumentWrite, NewChunk
from haiku_cli.store.transaction import atomic_write, storage_errors
from haiku_cli.store.writer import checkpoint, exclusive

if TYPE_CHECKING:
    from lancedb.table import Table


def new_id() -> str:
    """A fresh document or chunk id (UUID4: ids from different databases must not collide)."""
    return str(uuid.uuid4())


def chunk_row(chunks: Table, document_id: str, chunk: NewChunk) -> dict:
    """The row for a new chunk of table `chunks`: a fresh id, and its search text's length in index terms."""
    row = {"id": new_id(), "document_id": document_id, **chunk.model_dump()}
    row["search_text"] = chunk.search_text or chunk.text
    row["search_tokens"] = len(analyze(chunks, row["search_text"]))
    return row


def write_documents(db: Database, writes: Sequence[DocumentWrite]) -> None:
    """Insert or replace documents and their chunks in one all-or-nothing write, then refresh indexes."""
    if not writes:
        return
    replaced = [w.replaces.id for w in writes if w.replaces is not None]
    doc_rows = []
    chunk_rows = []
    for w in writes:
        doc = w.document
        if w.replaces is not None:
            doc = doc.model_copy(update={"id": w.replaces.id, "created_at": w.replaces.created_at})
        doc_rows.append(
            {
                "id": doc.id,
                "uri": doc.uri,
                "title": doc.title,
                "metadata": json.dumps(doc.metadata, ensure_ascii=False),
                "content": doc.content,
                "content_hash": doc.content_hash,
                "created_at": doc.created_at,
                "updated_at": doc.updated_at,
            }
        )
        chunk_rows.extend(chunk_row(db.chunks, doc.id, c) for c in w.chunks)
    with exclusive(db):
        with atomic_write(db), storage_errors(db, "cannot be written"):
            if replaced:
                db.chunks.delete(in_list("document_id", replaced))
                db.documents.delete(in_list("id", replaced))
            db.documents.add(doc_rows)
            if chunk_rows:
                db.chunks.add(chunk_rows)
            checkpoint("data-written")
        with storage_errors(db, "cannot be indexed"):
            refresh_indexes(db.chunks)


def delete_document(db: Database, document_id: str) -> None:
    """Delete a document and its chunks together."""
    with exclusive(db):
        with atomic_write(db), storage_errors(db, "cannot be written"):
            db.chunks.delete(f"document_id = {sql_string(document_id)}")
            db.documents.delete(f"id = {sql_string(document_id)}")
        with storage_errors(db, "cannot be indexed"):
            refresh_indexes(db.chunks)
