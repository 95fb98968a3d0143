"""All-or-nothing writes across tables, by recording table versions before a write and restoring them.

An interrupted write (Ctrl-C, a cancelled task) keeps what it committed up to its last keep point, where
every document it wrote was whole; a failure or a kill still leaves the database as it was.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

from haiku_cli.errors import DatabaseError, HaikuError
from haiku_cli.store.deadline import with_deadline
from haiku_cli.store.failures import (
    FailureKind,
    StorageError,
    is_refusal,
    is_stall,
    request_timeout,
    storage_failure,
)
from haiku_cli.store.handle import PENDING_WRITE, Database, read_meta
from haiku_cli.store.journal import FRAGMENTS, Journal, journal_of, restore, table_versions
from haiku_cli.store.outcomes import WriteOutcome, note
from haiku_cli.store.writer_lock import checkpoint, ensure_held, exclusive, kept_through_commit

_ASK_SECONDS = 30.0  # a local database cannot stall; the bound is only a net
_ASK_LIMITS = 3  # whether a commit landed is asked for this many request limits at most


@contextmanager
def atomic_write(db: Database, *, fragments: bool = False) -> Iterator[None]:
    """Run a multi-table write so that a failure or a kill leaves the database as it was.

    Nested uses join the outermost one: a whole `add-src` is one write, however many batches it commits.
    Interrupted, it keeps the state of its last `keep_point` (if any) and undoes the rest. `fragments`:
    a cluster's workers may write chunk fragments meanwhile; undoing the write removes those left over.
    """
    if db.in_write:
        yield
        return
    with exclusive(db):
        ensure_held(db)  # a lapsed writer must not even write a journal: its versions are stale
        before = journal_of(db)
        if fragments:
            before[FRAGMENTS] = db.chunks_table_name
        # The journal is committed before any data: if the process dies after this, the next writer
        # restores these versions, and readers in the meantime read them.
        with storage_errors(db, "cannot be written"):
            db.set_meta(PENDING_WRITE, json.dumps(before))
        checkpoint("journal-written")
        db.in_write = True
        db.keep_versions = None
        db.written, db.kept_counts, db.at_commit = None, (0, 0), {}
        try:
            yield
            ensure_held(db)
        except BaseException as exc:
            kept_counts = (0, 0)
            # A writer whose lease lapsed must not touch the database: whoever took it over owns the
            # journal now and undoes this write itself.
            # A store that stopped answering would wait out its limit again at each step of the undo: the
            # journal stays instead, readers read the versions it names and the next writer undoes it.
            if (db.writer_lock is None or db.writer_lock.valid()) and not db.stalled:
                interrupted = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
                kept = db.keep_versions if interrupted else None
                marks = {FRAGMENTS: before[FRAGMENTS]} if FRAGMENTS in before else {}
                # Restoring the keep point drops the journal: what is kept stays.
                if _undo(db, {**kept, **marks} if kept else before) and kept:
                    kept_counts = db.kept_counts
            note(WriteOutcome(db.name, stored=False, documents=kept_counts[0], chunks=kept_counts[1]))
            raise
        finally:
            db.in_write = False
            db.keep_versions = None
        (written, db.written), (at_commit, db.at_commit) = (db.written, None), (db.at_commit, {})
        checkpoint("before-commit")
        try:
            with storage_errors(db, "cannot be written"):
                if at_commit:
                    db.set_meta_dropping(at_commit, PENDING_WRITE)  # what it sets, with the commit
                else:
                    db.delete_meta(PENDING_WRITE)
        except StorageError as exc:
            if exc.failure.kind.is_refusal:
                raise  # the store answered no: the journal is still there, the write is not stored
            if _journal_gone(db):
                # The store took the commit, but its answer was lost: the write is stored.
                _note_stored(db, written)
                return
            raise StorageError(
                f"database '{db.name}': this write's commit may or may not have landed (check it with "
                f"haiku list): {exc.failure.reason(db.location)}",
                exc.failure,
            ) from exc
        if not kept_through_commit(db):
            raise DatabaseError(
                f"database '{db.name}': this write's commit took longer than its lease allowed, and "
                "another writer took the database over meanwhile, which undoes an unfinished write; it "
                "may not be stored: check it (haiku list), then run it again if it is missing"
            )
        _note_stored(db, written)


def _note_stored(db: Database, written: tuple[int, int] | None) -> None:
    documents, chunks = written or (0, 0)
    note(WriteOutcome(db.name, stored=True, documents=documents, chunks=chunks))


def _journal_gone(db: Database, tries: int = 4, pause: float = 2.0) -> bool:
    """Whether the journal's removal landed after all; asked a few times, as a store whose answer was
    lost often answers again seconds later (False when it never tells, or refuses to).

    The asks end three request limits (at least `pause` times `tries - 1`) after the first: a store
    that stopped answering waits each ask's limit out, and is asked again at once, not after a pause.
    """
    # Each ask is bounded as one request: a store that answers again does so at once, while LanceDB
    # asks a stalled store again and again (six lists of the versions, each waiting out the timeout).
    seconds = request_timeout(db.location) or _ASK_SECONDS
    deadline = time.monotonic() + max(_ASK_LIMITS * seconds, (tries - 1) * pause)

    def latest_meta() -> dict[str, str]:
        db.meta_table.checkout_latest()
        return read_meta(db.meta_table)

    for _ in range(tries):
        if db.writer_lock is not None and not db.writer_lock.valid():
            return False  # a writer that took over may have removed it, undoing this write
        try:
            meta = with_deadline(latest_meta, seconds, TimeoutError)
        except Exception as exc:
            if is_refusal(exc):
                return False  # the store answers, and says no: asking again would hear the same
            stalled = is_stall(exc, db.location)
            db.stalled = db.stalled or stalled
            wait = 0.0 if stalled else pause
            if time.monotonic() + wait >= deadline:
                return False
            time.sleep(wait)
            continue
        db.meta = meta
        return PENDING_WRITE not in meta
    return False


def keep_point(db: Database) -> None:
    """Mark the tables as they are now as what an interrupted write keeps (every document in them whole),
    with the documents and chunks the write committed so far (`db.written`).

    A no-op outside `atomic_write`.
    """
    if db.in_write:
        db.keep_versions = table_versions(db)
        db.kept_counts = db.written or (0, 0)


def _undo(db: Database, before: Journal) -> bool:
    """Restore the journal's versions; whether that was done (and the journal dropped)."""
    # If undoing fails too (the store is gone), the journal stays: the next writer to take the lock
    # undoes this write, and readers meanwhile read the versions it names. The first error is the news.
    try:
        restore(db, before)
    except Exception:
        return False
    return True


@contextmanager
def storage_errors(db: Database, what: str) -> Iterator[None]:
    """Turn a storage call's failure (LanceDB, OS) into one exit-3 line naming the database."""
    started = time.monotonic()
    try:
        yield
    except HaikuError:
        raise
    except Exception as exc:
        # How long it ran tells a stall from other failures whose message names no cause.
        failure = storage_failure(db.location, what, exc, ran=time.monotonic() - started)
        if isinstance(exc, TimeoutError) or (
            db.location.can_stall and failure.failure.kind is FailureKind.STALLED
        ):
            db.stalled = True
        raise failure from exc
