"""Replacing every chunk at once: write a new chunks table, then switch to it in one commit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from haiku_cli.store import schema
from haiku_cli.store.database import CHUNKS_TABLE, Database
from haiku_cli.store.indexes import create_fts_index, refresh_indexes
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.records import NewChunk
from haiku_cli.store.transaction import storage_errors
from haiku_cli.store.writer import exclusive
from haiku_cli.store.writes import make_chunk_rows

_WRITE_BATCH = 5_000


def replace_chunks(
    db: Database, rows: Sequence[tuple[str, NewChunk]], embedder_name: str, dimension: int
) -> None:
    """Swap in a new chunks table (possibly of another embedder); until the switch, readers see the old."""
    with exclusive(db), storage_errors(db, "cannot be rebuilt"):
        _replace_chunks(db, rows, embedder_name, dimension)


def _replace_chunks(
    db: Database, rows: Sequence[tuple[str, NewChunk]], embedder_name: str, dimension: int
) -> None:
    live = db.chunks_table_name
    for name in list(db.conn.list_tables().tables):
        if name.startswith(f"{schema.CHUNKS}_") and name != live:
            db.conn.drop_table(name)  # left behind by a rebuild that was killed
    new_name = f"{schema.CHUNKS}_{uuid.uuid4().hex[:12]}"
    table = db.conn.create_table(new_name, schema=schema.chunks_schema(dimension))
    create_fts_index(table)
    for start in range(0, len(rows), _WRITE_BATCH):
        table.add(make_chunk_rows(table, rows[start : start + _WRITE_BATCH]))
    refresh_indexes(table)
    # The single commit that makes the rebuild visible: table, embedder and dimension change together.
    db.set_meta_many(
        {CHUNKS_TABLE: new_name, "embedder_name": embedder_name, "embedder_dimension": str(dimension)}
    )
    db.chunks = table
    db.conn.drop_table(live)
    after_write(db)
