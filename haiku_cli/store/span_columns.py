"""Saying where old chunks stand: the span columns of chunks written before schema 3, filled in place.

The columns are replaced whole (dropped, then merged back by chunk id with every row's value), so rows
keep their addresses and the text, vector and key indexes stay as they are; both commits are one
all-or-nothing write.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.indexes import lance_dataset
from haiku_cli.store.reads import rows_where
from haiku_cli.store.transaction import atomic_write, storage_errors
from haiku_cli.store.writer_lock import checkpoint, ensure_held, exclusive

# char_start, char_end, line_start, line_end of one chunk (None where unknown)
Place = tuple[int | None, int | None, int | None, int | None]


def unplaced_documents(db: Database) -> list[str]:
    """The documents some chunk of which does not know where it stands (its char_start is null)."""
    if not db.chunks_carry_spans:
        return []
    with storage_errors(db, "cannot be read"):
        rows = wait(rows_where(db, db.chunks, "char_start IS NULL", ["document_id"]))
    return sorted(set(rows.column("document_id").to_pylist()))


def set_places(db: Database, places: Mapping[str, Place]) -> int:
    """Write the places of the chunks named (by id) in one all-or-nothing write; how many were set.

    Other rows keep theirs. None are set (0) without Lance's own API, which replacing columns in place needs.
    """
    if not places or not db.chunks_carry_spans:
        return 0
    if lance_dataset(db.chunks) is None:
        return 0
    with exclusive(db), atomic_write(db), storage_errors(db, "cannot be written"):
        ensure_held(db)
        dataset = lance_dataset(db.chunks)
        current = dataset.to_table(columns=["id", *schema.SPAN_FIELDS])
        ids = current.column("id").to_pylist()
        columns = {name: current.column(name).to_pylist() for name in schema.SPAN_FIELDS}
        changed = 0
        for row, chunk_id in enumerate(ids):
            place = places.get(chunk_id)
            if place is None:
                continue
            changed += 1
            for name, value in zip(schema.SPAN_FIELDS, place, strict=True):
                columns[name][row] = value
        if not changed:
            return 0
        fields = schema.span_fields()
        table = pa.table(
            [current.column("id"), *(pa.array(columns[f.name], f.type) for f in fields)],
            names=["id", *schema.SPAN_FIELDS],
        )
        # Two commits, each metadata or new column files only: a kill between them is undone by the
        # journal (the next writer restores the version before the drop).
        dataset.drop_columns(list(schema.SPAN_FIELDS))
        checkpoint("places-dropped")
        dataset.merge(table, left_on="id", right_on="id")
        db.chunks.checkout_latest()
    return changed
