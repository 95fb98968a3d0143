"""How a write runs against a database: holding its writer lock, and an add undone when it created it.

A failed or empty first add removes the database it created, so `list` and `info` say it does not exist,
as before the add; an add that waited for the lock while another first add removed the database creates
it afresh.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import TypeVar

import anyio.to_thread

from haiku_cli.errors import DatabaseError
from haiku_cli.store.command_log import record
from haiku_cli.store.database import exists
from haiku_cli.store.document_writes import remove_unwritten
from haiku_cli.store.failures import StorageError
from haiku_cli.store.handle import Database, note_stall
from haiku_cli.store.journal import table_versions
from haiku_cli.store.location import Location
from haiku_cli.store.transaction import storage_errors
from haiku_cli.store.writer_lock import exclusive

R = TypeVar("R")


class Write:
    """A write command under way: `operation` (None: not logged) names it in `haiku history`."""

    def __init__(self, db: Database, operation: str | None) -> None:
        self.db = db
        self.operation = operation


@asynccontextmanager
async def writing(
    db: Database, operation: str | None = None, *, always_logged: bool = False
) -> AsyncIterator[Write]:
    """Hold the database's writer lock for a whole command; waiting for it happens off the event loop.

    A command that finishes having changed the tables (or any, with `always_logged`: `vacuum` drops old
    versions even when it compacts nothing) is logged as `operation` (see store/command_log.py).
    """
    held = exclusive(db)
    await anyio.to_thread.run_sync(held.__enter__)
    write = Write(db, operation)
    try:
        with storage_errors(db, "cannot be read"):  # listing the tables: a store's failure is one line
            before = {} if always_logged else table_versions(db)
        yield write
        if write.operation is not None:
            await anyio.to_thread.run_sync(lambda: _log(db, write.operation, before))
    except BaseException as exc:
        note_stall(db, exc)  # the lock is let go of below without the failure: it must know of a stall
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lambda: held.__exit__(None, None, None))


def _log(db: Database, operation: str | None, before: dict[str, int]) -> None:
    # The write is committed already: a log entry that cannot be written must not make it look failed.
    with suppress(Exception):
        record(db, operation or "write", before)


class _RemovedMeanwhile(Exception):
    """The database this add opened was removed while it waited for the writer lock."""


async def adding(
    location: Location,
    open_writable: Callable[[], Awaitable[Database]],
    add: Callable[[Database], Awaitable[R]],
    *,
    stored: Callable[[R], bool],
    close: Callable[[], None],
    operation: str | None = None,
) -> R:
    """Run `add` on the database `open_writable` opens (creating it if need be), holding the writer lock.

    When the database did not exist before and the add fails or `stored` says it stored nothing, the
    database is removed again. `close` drops the opened handle after each attempt.
    """
    for _ in range(2):
        try:
            return await _add_once(location, open_writable, add, stored, operation)
        except _RemovedMeanwhile:
            # Another first add created the database, failed and removed it while this one waited for
            # its lock: nothing was written here yet, so this add creates it afresh, as a first add would.
            continue
        finally:
            close()
    raise DatabaseError(
        f"database '{location.name}' was removed by another writer while this add waited; run it again"
    )


async def _add_once(
    location: Location,
    open_writable: Callable[[], Awaitable[Database]],
    add: Callable[[Database], Awaitable[R]],
    stored: Callable[[R], bool],
    operation: str | None,
) -> R:
    path = location.local_path
    new_folder = path is not None and not await anyio.to_thread.run_sync(path.exists)
    existed = await anyio.to_thread.run_sync(exists, location)
    db = await open_writable()

    async def remove_if_created(failure: BaseException | None = None) -> None:
        if existed:
            return
        if failure is not None and note_stall(db, failure):
            # The store stopped answering: removing the database would wait out the limit again at each
            # step (a count, a listing, a drop per table), so it is left, and the message says so (unless
            # the add's write was stored: a database holding it would not have been removed).
            if isinstance(failure, DatabaseError) and not _stored(failure):
                raise _left_in_place(failure) from failure
            return
        with anyio.CancelScope(shield=True), suppress(DatabaseError):
            # If the store fails here too, an empty database stays behind: the add's own error is the news.
            await anyio.to_thread.run_sync(partial(remove_unwritten, db, folder=new_folder))

    async def removed() -> bool:
        return not await anyio.to_thread.run_sync(exists, location)

    locked = False
    try:
        async with writing(db, operation) as write:
            locked = True
            try:
                gone = await removed()
            except DatabaseError as exc:
                # Failed as the add would have (a stall leaves the database, and says so): the lock is held.
                await remove_if_created(exc)
                raise
            if gone:
                raise _RemovedMeanwhile
            try:
                report = await add(db)
            except BaseException as exc:
                await remove_if_created(exc)
                raise
            if not stored(report):
                write.operation = None  # nothing to log, and perhaps no database left to log it in
                await remove_if_created()
            return report
    except DatabaseError as exc:
        if locked:
            raise
        if note_stall(db, exc):
            # A store that stopped answering did not drop the tables: asking whether it did would wait
            # out the limit again. A database this add created is left, as after a stall mid-add.
            if existed:
                raise
            raise _left_in_place(exc) from exc
        # Taking the lock reads the tables at their latest versions, which fails if they were dropped.
        if await removed():
            raise _RemovedMeanwhile from None
        raise


def _stored(failure: DatabaseError) -> bool:
    """Whether the add's write was stored before it failed (only its index upkeep after it did)."""
    return failure.hint is not None and failure.hint.action == "finish_upkeep"


def _left_in_place(failure: DatabaseError) -> DatabaseError:
    """The add's failure, saying that the database it created before the store stalled is still there."""
    message = f"{failure}; the new database is left in place, as removing it would wait on the store again"
    if isinstance(failure, StorageError):
        return StorageError(message, failure.failure, hint=failure.hint)
    return DatabaseError(message, hint=failure.hint)
