"""Replacing every chunk: fill a new chunks table in batches, then switch to it in one commit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import suppress

from haiku_cli.store import schema
from haiku_cli.store.database import CHUNKS_TABLE, Database
from haiku_cli.store.document_writes import make_chunk_rows
from haiku_cli.store.indexes import create_fts_index, refresh_indexes
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.outcomes import WriteOutcome, note
from haiku_cli.store.records import DocumentSummary, NewChunk
from haiku_cli.store.tag_records import drop_stray_chunk_tables, tagged_chunk_tables
from haiku_cli.store.transaction import storage_errors
from haiku_cli.store.writer_lock import checkpoint, ensure_held


class NewChunksTable:
    """A chunks table being filled beside the live one; readers see the live one until `switch`.

    Create it, `add` batches, then `switch`; a rebuild that fails calls `discard` instead, which leaves
    the database as it was. The writer lock must be held throughout (see `haiku_cli.store.writer_lock`).
    """

    def __init__(self, db: Database, dimension: int) -> None:
        if db.writer_lock is None:
            raise RuntimeError("a rebuild needs the writer lock")
        self.db = db
        self.dimension = dimension
        self.rows = 0
        self.live = False  # switched to: the database's chunks from then on, never discarded
        with storage_errors(db, "cannot be rebuilt"):
            drop_stray_chunk_tables(db)
            self.name = f"{schema.CHUNKS}_{uuid.uuid4().hex[:12]}"
            self.table = db.conn.create_table(self.name, schema=schema.chunks_schema(dimension))
            create_fts_index(self.table)

    def add(self, rows: Sequence[tuple[DocumentSummary, NewChunk]]) -> None:
        """Write one batch of (document, chunk) rows."""
        with storage_errors(self.db, "cannot be rebuilt"):
            ensure_held(self.db)
            self.table.add(make_chunk_rows(self.table, rows))
        self.rows += len(rows)
        checkpoint("rebuild-batch")

    def switch(self, embedder_name: str) -> None:
        """Make the new table live (with its embedder and schema version) in one commit; drop the old one."""
        db = self.db
        with storage_errors(db, "cannot be rebuilt"):
            refresh_indexes(self.table)
            ensure_held(db)
            live = db.chunks_table_name
            # The single commit that makes the rebuild visible: table, embedder and dimension together.
            # The new table has the current layout (chunks carry their documents' fields).
            db.set_meta_many(
                {
                    CHUNKS_TABLE: self.name,
                    "schema_version": str(schema.SCHEMA_VERSION),
                    "embedder_name": embedder_name,
                    "embedder_dimension": str(self.dimension),
                }
            )
            self.live = True
            db.chunks = self.table
            note(WriteOutcome(db.name, stored=True, documents=0, chunks=self.rows))
        if live not in tagged_chunk_tables(db):  # a tag reads it: it goes with the tag's deletion
            # The rebuild is stored: failing to drop the old table must not report it as not rebuilt. A
            # table left here is a stray that the next vacuum or rebuild drops (drop_stray_chunk_tables).
            with suppress(Exception):
                db.conn.drop_table(live)
        after_write(db)

    def discard(self) -> None:
        """Drop the new table; the live one was never touched.

        Once the switch committed, the new table is the live one: what failed after it (dropping the old
        table, the index upkeep, a Ctrl-C) leaves the rebuild stored, and the table stays.
        """
        if self.live:
            return
        # If the store fails here too, the next rebuild drops it: the rebuild's own error is the news.
        with suppress(Exception):
            self.db.conn.drop_table(self.name)
