"""The journal of an unfinished write: the table versions from before it, read back or restored.

`transaction` writes the journal; the writer lock undoes one left by a dead writer, and readers read the
state it names. It also names the chunks table live when the write began: a write that makes another
chunks table live (`tag restore` across a rebuild) does so in the commit that removes the journal, so a
journal beside another live table is only left by an older haiku that switched first; that write stands
(its version numbers are another table's and must not be applied to the live one).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING

from haiku_cli.store import schema
from haiku_cli.store.handle import PENDING_WRITE, Database, drop_tables

LIVE_CHUNKS = "live_chunks_table"  # the journal's entry naming the chunks table live before the write
if TYPE_CHECKING:
    from lancedb.table import Table

# Every version stays when fragments no version names are removed.
_ALL_VERSIONS = timedelta(days=365 * 100)
# The journal's entry saying workers may have written uncommitted fragments into the chunks table.
FRAGMENTS = "fragments"
Journal = dict[str, int | str]  # table -> version before the write, and LIVE_CHUNKS -> a table's name


def table_versions(db: Database) -> dict[str, int]:
    """The versions of the tables a write changes, as the journal records them."""
    return {name: table.version for name, table in _tables(db).items()}


def journal_of(db: Database) -> Journal:
    """What a write's journal records: the table versions, and which chunks table is live."""
    return {**table_versions(db), LIVE_CHUNKS: db.chunks_table_name}


def switched(db: Database, before: Journal) -> bool:
    """Whether the write this journal is of already made another chunks table live (its last commit)."""
    live = before.get(LIVE_CHUNKS)
    return live is not None and live != db.chunks_table_name


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
    if switched(db, before):
        return  # its last commit is stored: the latest state is the write's whole
    for name, table in _tables(db).items():
        if name not in before:
            db.forget_side_table(name, gone=True)  # made by the unfinished write: not there before it
        elif table.version != before[name]:
            table.checkout(int(before[name]))


def restore(db: Database, before: Journal) -> None:
    """Put the tables back at the journal's versions and drop the journal (a write that reached its
    switch of chunks table stands: only the journal goes)."""
    if switched(db, before):
        db.delete_meta(PENDING_WRITE)
        return
    for name, table in _tables(db).items():
        if name not in before:
            drop_tables(db.conn, [name])  # created by the write being undone
            db.forget_side_table(name)
        elif table.version != before[name]:
            table.restore(int(before[name]))
    if FRAGMENTS in before:
        _remove_fragments(db)
    db.delete_meta(PENDING_WRITE)


def _remove_fragments(db: Database) -> None:
    from contextlib import suppress

    # Files no version names are unseen by readers and writers: if they cannot be removed now, the write
    # is still undone (Lance's own cleanup removes such files after a week).
    with suppress(Exception):
        remove_stray_fragments(db.chunks)


def remove_stray_fragments(chunks: Table) -> None:
    """Remove the chunks table's files that no version names: fragments written but never committed.

    Run under the writer lock once a cluster's tasks have ended: only the lock holder's add writes chunk
    files (a lapsed writer stops writing before another may take over; see store/writer_lock.py).
    """
    try:
        chunks.to_lance().cleanup_old_versions(
            older_than=_ALL_VERSIONS, delete_unverified=True, error_if_tagged_old_versions=False
        )
    finally:
        chunks.checkout_latest()
