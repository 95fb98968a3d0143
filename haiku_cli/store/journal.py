"""The journal of an unfinished write: the table versions from before it, read back or restored.

`transaction` writes the journal; the writer lock undoes one left by a dead writer, and readers read the
state it names.
"""

from __future__ import annotations

import json

from haiku_cli.store import schema
from haiku_cli.store.handle import PENDING_WRITE, Database, drop_tables


def table_versions(db: Database) -> dict[str, int]:
    """The versions of the tables a write changes, as the journal records them."""
    return {name: table.version for name, table in _tables(db).items()}


def _tables(db: Database):
    # A side table is created before the journal of the write that first fills it (sources), or by that
    # write (pictures): then the journal does not name it, and undoing the write drops it.
    return {schema.DOCUMENTS: db.documents, schema.CHUNKS: db.chunks, **db.side_tables()}


def recover(db: Database) -> None:
    """Undo a write that died half-way (called when a writer opens the database)."""
    before = json.loads(db.meta[PENDING_WRITE])
    restore(db, before)


def read_snapshot(db: Database) -> None:
    """Point a reader at the table versions from before an unfinished write."""
    before = json.loads(db.meta[PENDING_WRITE])
    for name, table in _tables(db).items():
        if name not in before:
            db.forget_side_table(name, gone=True)  # made by the unfinished write: not there before it
        elif table.version != before[name]:
            table.checkout(before[name])


def restore(db: Database, before: dict[str, int]) -> None:
    """Put the tables back at the journal's versions and drop the journal."""
    for name, table in _tables(db).items():
        if name not in before:
            drop_tables(db.conn, [name])  # created by the write being undone
            db.forget_side_table(name)
        elif table.version != before[name]:
            table.restore(before[name])
    db.delete_meta(PENDING_WRITE)
