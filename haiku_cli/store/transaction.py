"""All-or-nothing writes across tables, by recording table versions before a write and restoring them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from haiku_cli.errors import HaikuError
from haiku_cli.store import schema
from haiku_cli.store.database import PENDING_WRITE, Database, storage_failure
from haiku_cli.store.writer import checkpoint, exclusive


def _versions(db: Database) -> dict[str, int]:
    return {schema.DOCUMENTS: db.documents.version, schema.CHUNKS: db.chunks.version}


def _tables(db: Database):
    return {schema.DOCUMENTS: db.documents, schema.CHUNKS: db.chunks}


@contextmanager
def atomic_write(db: Database) -> Iterator[None]:
    """Run a multi-table write so that a failure or a kill leaves the database as it was.

    Nested uses join the outermost one: a whole `add-src` is one write, however many batches it commits.
    """
    if db.in_write:
        yield
        return
    with exclusive(db):
        before = _versions(db)
        # The journal is committed before any data: if the process dies after this, the next writer
        # restores these versions, and readers in the meantime read them.
        with storage_errors(db, "cannot be written"):
            db.set_meta(PENDING_WRITE, json.dumps(before))
        checkpoint("journal-written")
        db.in_write = True
        try:
            yield
        except BaseException:
            _undo(db, before)
            raise
        finally:
            db.in_write = False
        checkpoint("before-commit")
        with storage_errors(db, "cannot be written"):
            db.delete_meta(PENDING_WRITE)


def _undo(db: Database, before: dict[str, int]) -> None:
    # If undoing fails too (the store is gone), the journal stays: the next writer to take the lock
    # undoes this write, and readers meanwhile read the versions it names. The first error is the news.
    with suppress(Exception):
        _restore(db, before)


@contextmanager
def storage_errors(db: Database, what: str) -> Iterator[None]:
    """Turn a storage call's failure (LanceDB, OS) into one exit-3 line naming the database."""
    try:
        yield
    except HaikuError:
        raise
    except Exception as exc:
        raise storage_failure(db.name, what, exc) from exc


def recover(db: Database) -> None:
    """Undo a write that died half-way (called when a writer opens the database)."""
    before = json.loads(db.meta[PENDING_WRITE])
    _restore(db, before)


def read_snapshot(db: Database) -> None:
    """Point a reader at the table versions from before an unfinished write."""
    before = json.loads(db.meta[PENDING_WRITE])
    for name, table in _tables(db).items():
        if table.version != before[name]:
            table.checkout(before[name])


def _restore(db: Database, before: dict[str, int]) -> None:
    for name, table in _tables(db).items():
        if table.version != before[name]:
            table.restore(before[name])
    db.delete_meta(PENDING_WRITE)
